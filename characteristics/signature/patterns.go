package signature

// patterns returns the fragment table. Every fragment is matched with ASCII
// case ignored, anywhere in the scanned value; each is chosen to occur in
// attack payloads and not in the pages, searches and user agents of real
// visitors (tests in signature_test.go hold both sides).
func patterns() []pattern {
	var ps []pattern
	add := func(c Class, texts ...string) {
		for _, t := range texts {
			ps = append(ps, pattern{c, t})
		}
	}
	add(Traversal, "../../", `..\..\`, "..;/", "..%2f", "..%5c", "%2e%2e", ".%2e/")
	add(LFI,
		"/etc/passwd", "/etc/shadow", "/etc/group", "/etc/hosts", "/etc/issue", "/etc/f5-release",
		"/proc/self/", "/proc/version", "/windows/win.ini", `\windows\win.ini`, "/boot.ini", `\boot.ini`,
		"/win.ini", "system32/", `system32\`, "web-inf/", "meta-inf/", "/.ssh/id_", "file:///",
		"/dev/cmdb/", "/var/log/", "/etc/nginx/", "/etc/httpd/",
	)
	add(RFI,
		"php://input", "php://filter", "phar://", "expect://", "data://text", "zip://",
		"glob://", "rfiinc.txt", "allow_url_include", "auto_prepend_file",
		"ssh2.exec://", "ssh2.shell://", "ssh2.tunnel://", "ssh2.sftp://", "ssh2.scp://", "ogg://", "rar://",
		"compress.zlib://", "compress.bzip2://", "gopher://", "dict://", "jar:http",
	)
	add(CMDi,
		"${ifs}", "$ifs$", ";wget ", "|wget ", "`wget ", "wget http", "wget -", "curl http", ";curl ", "|curl ",
		"/bin/sh", "/bin/bash", "/bin/busybox", "/bin/zsh", "cmd.exe", "powershell", "rm -rf", "chmod +x",
		"chmod 777", "nc -e", "/dev/tcp/", ";cat /", "|cat /", "`id`", "$(id)", ";id;", "|id;", "; id",
		"| sh", "|sh;", ";sh ", ";touch ", "|touch ", "`touch ", "$(echo", "base64 -d", "tftp -g", "/tmp/;", "mkfifo",
		"whoami", "sh -c ", "bash -c ", "uname -a", ";uname", "|uname", "| wget", "; wget", "&& wget", "| curl",
		"; curl", "/dev/udp/", ">&/dev", ">& /dev", "0>&1", "/usr/bin/", "/usr/sbin/", "/bin/nc", "nc -l",
		"ncat ", "netcat ", "socat ", "telnet ", "/tmp/.", ";env", ";set", "; env", "$ifs", "\\${ifs",
		// Windows: PowerShell and the binaries attackers live off
		"invoke-webrequest", "invoke-expression", "invoke-restmethod", "iex(", ";iwr ", "|iwr ", "iwr http",
		"iwmi ", "win32_process", "downloadstring", "downloadfile", "-encodedcommand", "-enc ", "certutil",
		"mshta", "bitsadmin", "regsvr32", "rundll32", "bcdboot", "bcdedit", "vssadmin", "wmic ", "cscript ",
		"wscript ", "schtasks", "net user ", "net localgroup", "reg add ", "cmd /c", "cmd.exe /c",
	)
	add(Log4Shell,
		"${jndi:", "${${", "${lower:", "${upper:", "${::-", "${env:", "${sys:", "${date:",
		"${base64:", "${java:", "${main:", "${ctx:", "${k8s:", "${docker:", "${web:", "${log4j:",
		"${spring:", "${bundle:", "${marker:", "${sd:", "jndi:ldap", "jndi:rmi", "jndi:dns",
		"jndi:iiop", "jndi:corba", "jndi:nds", "jndi:nis",
	)
	add(JavaInjection,
		"${script:", "${url:", "${dns:", "${const:", "${file:", "${xml:",
		"@java.lang.", "java.lang.runtime", "getruntime()", ".getruntime", "processbuilder",
		"#_memberaccess", "@ognl", "ognlcontext", "opensymphony.", "#context[", "#request[",
		"freemarker.template", "class.module.classloader", "class.classloader", "classloader.urls",
		"classloader.resources", "t(java.lang", "new java.", "java.io.", "javax.script",
		"${(#", "%{(#", "${@", "#{7*7}", "${7*7}", "{{7*7}}", "${{7*", "${\"freemarker",
	)
	add(PHPInjection,
		"call_user_func", "invokefunction", `\think\`, "think\\app", "think\\container",
		"base64_decode(", "eval(", "assert(", "system(", "passthru(", "shell_exec(", "popen(",
		"proc_open(", "pcntl_exec", "phpinfo()", "<?php", "<?=", "die(md5", "file_put_contents",
		"fwrite(", "preg_replace", "create_function", "md5(", "print(md5", "-d allow_url",
		"__halt_compiler", "$_get[", "$_post[", "$_request[", "$_server[",
		"<?", "[php]", "[/php]", "{php}", "{/php}", "[\\php]", "$_cookie[", "$_files[", "$_env[", "$globals[",
		"php://stdin", "php://memory", "php://temp", "o:8:\"stdclass", "a:1:{",
	)
	add(Shellshock, "() {", "(){")
	add(SSRFMetadata,
		"169.254.169.254", "169.254.170.2", "metadata.google.internal", "100.100.100.200",
		"fd00:ec2::254", "/latest/meta-data", "/computemetadata/", "/metadata/instance",
		"/latest/user-data", "/latest/api/token",
	)
	add(Webshell,
		"shell.php", "shell.asp", "shell.jsp", "c99.php", "r57.php", "c100.php", "wso.php", "wso2.php",
		"b374k", "alfa.php", "alfacgiapi", "alfa-rex", "indoxploit", "filesman", "/cmd.php",
		"webshell", "phpspy", "/up.php", "/uploader.php", "/1337.php", "/x.aspx", "/shell?",
		"/cmd.jsp", "/cmd.asp", "/backdoor", "/hack.php", "/fm.php", "/sym.php", "/symlink.php",
		"/0x.php", "/xl.php", "/mini.php", "/leaf.php", "/priv8", "/haxor", "/wp-shell",
		"/tmp.php", "/k.php", "/a.php", "/conflg.php", "/lufix.php", "/radio.php", "/wp-configs.php",
	)
	add(CVEProbe,
		"/vendor/phpunit/", "eval-stdin.php", "telerik.web.ui.webresource.axd", "htmlawedtest.php",
		"/api/v2/cmdb/system/admin", "/setup/setupadministrator.action", "/server-info.action",
		"/json/setup-restore.action", "ztp_gate.php", "createremoteappwebsession.php",
		"/_ignition/execute-solution", "/cgi/networkdiag.cgi", "/setup.cgi", "/crx/packmgr/",
		"/service/extension/backup/mboximport", "/tmui/locallb/", "/tmui/login.jsp/",
		"/remote/fgt_lang", "/dana-na/", "/dana/html5acc/", "/catalog-portal/ui/oauth/verify",
		"/vcav-providers/provider-logo", "/graphapi/vendor/microsoft/", "getphpinfo.php",
		"/boaform/", "/hnap1", "/goform/", "/cgi-bin/luci", "/+cscoe+/", "/+cscol+/", "/cscoe/",
		"/actuator/gateway/routes", "/wls-wsat/", "/_async/asyncresponseservice", "/mgmt/tm/util/bash",
		"/console/css/%252e", "/console/images/%252e", "/solr/admin/cores?", "/cgi-bin/videoconfiguration.cgi",
		"/w00tw00t", "/manager/text/deploy", "/invoker/jmxinvokerservlet", "/jmx-console/",
		"/web-console/", "/struts2-showcase/", "/axis2/axis2-admin/", "/webtools/control/",
		"/vpns/cfg/", "/vpn/../vpns/", "/owa/auth/logon.aspx?url", "/autodiscover/autodiscover.json?@",
		"/mifs/", "/php/utils/", "/global-protect/portal/css/", "/nice%20ports", "/cgi-bin/kerbynet",
		"/cgi-bin/mainfunction.cgi", "/shell?cd", "/tmunblock.cgi", "/cgi-bin/;", "/level/15/exec",
		"/hudson/script", "/script?", "/wsman", "/ecp/default.aspx?__viewstate", "/securityrealm/user/admin",
		"/menu/stapp", "/core/skin/login.aspx", "/cgi-bin/recent.cgi", "/cgi-bin/tools/tools.pl",
		"/sap/bc/gui/sap/its/webgui", "/.js.map", "/sap/bc/soap/rfc", "/ctc/servlet", "/developmentserver/metadatauploader",
	)
	add(SensitiveFile,
		"/.env", "/.git/", "/.git", "/.svn/", "/.hg/", "/.bzr/", "/.aws/", "/.ssh/", "/.docker/",
		"/.htpasswd", "/.htaccess", "/.ds_store", "/.vscode/", "/.idea/", "/.npmrc", "/.kube/",
		"/.bash_history", "/.bashrc", "/.zsh_history", "/.mysql_history", "/.psql_history",
		"/.listing", "/.s3cfg", "/.boto", "/.pgpass", "/.netrc", "/.git-credentials", "/.dockerenv",
		"/.wp-config", "/web.config", "/id_rsa", "/id_dsa", "/id_ecdsa", "/id_ed25519",
		"/phpinfo.php", "/credentials.json", "/.user.ini", "/server.key", "/sftp-config.json",
		"/.ftpconfig", "/.well-known/security.txt~", "/wp-config.php",
		// AI coding assistants' and automation tools' settings, with keys inside
		"/.claude/", "/.cursor/", "/.roo/", "/.zed/", "/.opencode/", "/.plandex/", "/.fabric/", "/.n8n/",
		"/.junie/", "/.continue/", "/.aider", "/.codeium/", "/.windsurf", "/.gemini/", "/.copilot/",
		"/.cline", "/.mcp.json", "/mcp.json", "/privkey.pem", "/letsencrypt/", "/dump.rdb", "/.pem",
	)
	// Leftovers a site may really serve (a migration's .sql, a download's
	// .zip): rules act on them only when the site does not have them.
	add(Backup,
		"/.config", "/.cache", "/.local/", "/.circleci/", "/.travis.yml", "/.gitlab-ci.yml",
		"/wp-config.php.", "/wp-config.bak", "/wp-config.txt", "/wp-config.old", "/info.php",
		"/config.json.bak", "/database.yml", "/settings.py", "/secrets.json", "/appsettings.json",
		"/docker-compose.yml", "/dump.sql", "/backup.sql", "/db.sql", "/database.sql", "/backup.zip",
		"/backup.tar", "/site.tar.gz", "/www.zip", "/privatekey", "/composer.lock", "/localsettings.php",
		"/config.inc.php", "/configuration.php~", ".sql", ".sql.gz", ".bak", ".old", ".orig", ".save",
		".swp", ".swo", ".sqlite", ".tar.gz", ".tgz", ".7z", ".rar",
	)
	add(AdminPanel,
		"/phpmyadmin", "/pma/", "/myadmin", "/mysqladmin", "/dbadmin", "/sqladmin", "/adminer",
		"/server-status", "/server-info", "/manager/html", "/jmx-console", "/solr/", "/jenkins",
		"/actuator", "/owa/", "/webmin", "/cpanel", "/plesk", "/administrator/",
		"/admin/pma", "/phppgadmin", "/pgadmin", "/mongo-express", "/kibana", "/_cat/indices",
		"/_all_dbs", "/console/login", "/axis2-admin", "/sap/bc/", "/nwa", "/irj/portal",
		"/webdav", "/HNAP1", "/cgi-bin/", "/scripts/setup.php", "/typo3/", "/setup.php", "/install.php", "/installer.php", "/+cscoe+", "/remote/login", "/vpn/index.html",
		"/admin.php", "/admin/config.php", "/sitecore/", "/umbraco/", "/bitrix/admin",
	)
	add(WordPress,
		"/wp-content/plugins/", "/wp-content/themes/", "/wp-includes/", "/wp-admin/", "/wp-json/wp/v2/users",
		"/wp-login.php", "/xmlrpc.php", "/wp-config", "/wp-content/uploads/", "/wp-content/debug.log",
		"/wp-admin/install.php", "/wp-admin/setup-config.php", "/readme.html", "/license.txt",
		"?author=", "/wp-cron.php", "/wp-links-opml.php", "/wp-trackback.php",
	)
	add(ScannerUA,
		"sqlmap", "nikto", "nmap scripting engine", "nmap nse", "masscan", "zgrab", "nuclei",
		"wpscan", "dirbuster", "gobuster", "feroxbuster", "fuzz faster u fool", "wfuzz", "acunetix",
		"netsparker", "openvas", "w3af.org", "arachni", "skipfish", "havij", "jaeles", "whatweb",
		"morfeus", "nessus", "joomscan", "commix", "xsstrike", "(hydra)", "medusa/", "brutus",
		"appscan", "webinspect", "paros/", "burpcollaborator", "interact.sh", "oast.", "censysinspect",
		"l9explore", "l9tcpid", "zmeu", "dfind", "sysscan", "blackwidow", "grabber", "webshag",
		"w00tw00t", "morfeus fucking", "httprint", "bsqlbf", "pangolin", "sql power injector",
		"absinthe", "trackback/", "webvulnscan", "vega/", "hydra/", "fimap", "jorgee", "zeus",
		"struts-pwn", "log4shell", "t3 scanner", "nsfocus",
		"report runner")
	add(SQLiProbe,
		"union select", "union all select", "union distinct select", "information_schema",
		",null,", ",null--", "null,null", "sleep(", "pg_sleep", "benchmark(", "waitfor delay",
		"@@version", "' or '", "' or 1", "\" or \"", "or 1=1", "and 1=1", "' and '", "extractvalue(",
		"updatexml(", "load_file(", "into outfile", "into dumpfile", "group_concat(", "concat(0x",
		"0x7e", "char(58", "sysobjects", "xp_cmdshell", "dbms_pipe", "utl_inaddr", "' --", "'--",
		"order by 1--", "/**/", "select * from", "select count(", "version()--",
		"/*!", "/*+", "'::json", "::jsonb", "json_extract(", "jsonb_", "' @>", "'@>", "<@ '", "' ->", "->> ",
		"#>>", "' ? '", "' ?| ", "' ?& ", "@@ '", "@? '", "' #-", " || '", "string_to_array(", "waitfor delay",
		"having 1=1", "' or ''='", "or true--", "' and sleep", "if(length(", "union(select", "),(select",
		"select+", "convert(int", "cast(0x", "db_name(", "user_name(", "current_user", "@@datadir",
		"sqlite_master", "pg_catalog", "'$.", "' < '", "' > '", "load_extension(", "exp(~", "rlike (select", "procedure analyse",
	)
	add(XSSProbe,
		"<script", "&lt;script", "</script", "&lt;/script", "javascript:alert", "document.cookie",
		"onerror=alert", "onload=alert", "<iframe", "<svg/onload", "string.fromcharcode", "<img src=x",
		"javascript:", "vbscript:", "livescript:", "data:text/html", "data:,", "data: ,", "-moz-binding",
		"url(javascript", "expression(", "formaction", "&#60", "&#x3c", "&#060", "\\x3cscript", "\\u003cscript",
		"+adw-", "!entity", "<!doctype", "srcdoc=", "xlink:href", "document.domain", "document.write",
		"window.location", "top.location", ".innerhtml", "constructor(", "settimeout`", "alert`",
	)
	add(NodeInjection,
		"_$$nd_func$$_", "__js_function", "xyqktkrfrlvoqyqkx", "this.constructor", ".constructor.constructor",
		"module.exports", "process.env", "process[", "process.binding", "process.mainmodule", "child_process",
		"require[", "require(", "require.main", "console.", "console[", "\\u006f", "\\u0063", "global.process",
		".readdirsync", ".execsync", "__proto__", "constructor.prototype", "#{process", "#{require",
	)
	return ps
}
