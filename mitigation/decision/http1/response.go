package http1

import (
	"net/http"
	"strconv"
)

// Response collects a handler's answer. It is an http.ResponseWriter, so
// code written for net/http can render into it, and has allocation-free
// methods for the hot path (SetStatus, AddHeader). Nothing is written to
// the connection until the handler returns.
type Response struct {
	status int
	hdr    http.Header // lazily made, cleared per request
	raw    []byte      // header lines added with AddHeader
	body   []byte
}

// Header returns the header map to set before WriteHeader, as in net/http.
func (w *Response) Header() http.Header {
	if w.hdr == nil {
		w.hdr = make(http.Header)
	}
	return w.hdr
}

// WriteHeader sets the status code. Only the first call counts.
func (w *Response) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

// SetStatus is WriteHeader.
func (w *Response) SetStatus(code int) { w.WriteHeader(code) }

// Write appends to the body, setting status 200 if none was set.
func (w *Response) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, b...)
	return len(b), nil
}

// AddHeader adds a header line without allocating. The name must be a
// valid token and the value must not hold CR or LF: they are not checked.
func (w *Response) AddHeader(name string, value []byte) {
	w.raw = append(w.raw, name...)
	w.raw = append(w.raw, ": "...)
	w.raw = append(w.raw, value...)
	w.raw = append(w.raw, "\r\n"...)
}

func (w *Response) reset() {
	w.status = 0
	clear(w.hdr)
	w.raw = w.raw[:0]
	if cap(w.body) > 64<<10 {
		w.body = nil // keep one huge answer from pinning its buffer
	}
	w.body = w.body[:0]
}

// appendTo writes the response to dst. date is a whole "Date: ...\r\n"
// line. head drops the body (RFC 9110 9.3.2); closing adds
// "Connection: close"; keepAlive10 answers an HTTP/1.0 keep-alive.
func (w *Response) appendTo(dst []byte, date []byte, head, closing, keepAlive10 bool) []byte {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, ' ')
	dst = append(dst, http.StatusText(status)...)
	dst = append(dst, "\r\n"...)
	dst = append(dst, date...)
	dst = append(dst, w.raw...)
	userLength := ""
	for k, vs := range w.hdr {
		if k == "Content-Length" {
			if len(vs) > 0 {
				userLength = vs[0]
			}
			continue
		}
		for _, v := range vs {
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			dst = appendSafe(dst, v)
			dst = append(dst, "\r\n"...)
		}
	}
	// No Content-Length on 1xx and 204 (RFC 9110 8.6); the body's own
	// length otherwise, except that a HEAD answer may state the length
	// the GET would have had.
	if status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified {
		dst = append(dst, "Content-Length: "...)
		if head && userLength != "" {
			dst = appendSafe(dst, userLength)
		} else {
			dst = strconv.AppendInt(dst, int64(len(w.body)), 10)
		}
		dst = append(dst, "\r\n"...)
	}
	if closing {
		dst = append(dst, "Connection: close\r\n"...)
	} else if keepAlive10 {
		dst = append(dst, "Connection: keep-alive\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	if !head && status != http.StatusNoContent && status != http.StatusNotModified {
		dst = append(dst, w.body...)
	}
	return dst
}

// appendSafe appends a header value with CR and LF replaced by spaces, so
// a handler's value cannot split the response (net/http does the same).
func appendSafe(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}

// appendError writes the answer to a head that could not be parsed; the
// connection closes after it.
func appendError(dst []byte, date []byte, status int) []byte {
	var w Response
	w.status = status
	w.body = append(w.body, http.StatusText(status)...)
	w.body = append(w.body, '\n')
	w.AddHeader("Content-Type", []byte("text/plain; charset=utf-8"))
	return w.appendTo(dst, date, false, true, false)
}

// Status is the status code set so far, 0 if none.
func (w *Response) Status() int { return w.status }
