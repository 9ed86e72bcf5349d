package nginxlog_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/ingest/nginxlog"
)

func ExampleCompile() {
	f, err := nginxlog.Compile(`
log_format main escape=json
    '{"ip":"$remote_addr","port":"$remote_port",'
    '"req":"$request","status":$status}';`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Name(), f.Escape(), f.Variables())

	_, err = nginxlog.Compile(`$remote_addr$remote_port`)
	fmt.Println(err)
	// Output:
	// main json [remote_addr remote_port request status]
	// nginxlog: log format byte 12: $remote_port follows $remote_addr with no literal text between them, so a line cannot be split
}

func ExampleFormat_Parse() {
	f := nginxlog.MustCompile("combined")
	line := []byte(`203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /login?next=%2F HTTP/1.1" 401 17 "-" "curl/8.4.0"`)
	var e characteristics.Event
	if err := f.Parse(line, &e); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.IP, e.Time, e.Method, e.Path, e.Query, e.Status, e.UserAgent)

	err := f.Parse([]byte(`203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 2OO 17 "-" "-"`), &e)
	fmt.Println(&nginxlog.LineError{File: "access.log", Line: 2, Err: err})
	// Output:
	// 203.0.113.7 2000-10-10 20:55:36 +0000 UTC GET /login next=%2F 401 curl/8.4.0
	// access.log:2: nginxlog: $status at byte 62: want an HTTP status code, got "2OO"
}

func ExampleParseJSON() {
	var e characteristics.Event
	err := nginxlog.ParseJSON([]byte(`{"remote_addr":"::ffff:192.0.2.1","status":429,"http_x_api_key":"k1"}`), &e)
	key, _ := e.Header("x-api-key")
	fmt.Println(err, e.IP, e.Status, key)
	// Output:
	// <nil> 192.0.2.1 429 k1
}

func ExampleReader() {
	path := filepath.Join(os.TempDir(), "nginxlog-example.log")
	os.WriteFile(path, []byte("192.0.2.1 - - [10/Oct/2000:13:55:36 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"-\"\nnot a line\n"), 0o644)
	defer os.Remove(path)

	f := nginxlog.MustCompile("combined")
	r, err := nginxlog.Open(path) // plain or gzip
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	var e characteristics.Event
	for {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := f.Parse(line, &e); err != nil {
			fmt.Println(&nginxlog.LineError{File: filepath.Base(path), Line: r.Line(), Err: err})
			continue
		}
		fmt.Println(r.Line(), e.IP, e.Status)
	}
	// Output:
	// 1 192.0.2.1 200
	// nginxlog-example.log:2: nginxlog: $remote_addr at byte 0: want a value ended by ' - ', got "not a line"
}
