package http1

import (
	"net/http"
	"time"
)

// conn is one connection's state between reads. The loop owns it.
type conn struct {
	fd        int
	in        []byte // bytes of an incomplete head, carried to the next read
	out       []byte // answers, written up to sent
	sent      int
	discard   int64 // body bytes still to skip
	closing   bool  // close once out is written
	writing   bool  // waiting for the socket to take out
	last      int64 // unix nanoseconds of the last read or write progress
	headStart int64 // when the incomplete head in `in` began
}

// session is what a loop shares among its connections: the parse and
// answer scratch and the current time.
type session struct {
	s    *Server
	req  Request
	resp Response
	now  time.Time
	date []byte // "Date: ...\r\n"
	sec  int64
}

// tick sets the time for what the loop does next.
func (ss *session) tick(now time.Time) {
	ss.now = now
	if sec := now.Unix(); sec != ss.sec {
		ss.sec = sec
		ss.date = append(ss.date[:0], "Date: "...)
		ss.date = now.UTC().AppendFormat(ss.date, http.TimeFormat)
		ss.date = append(ss.date, "\r\n"...)
	}
}

// process parses and answers every whole request in data, appending the
// answers to c.out, and keeps an incomplete head in c.in. data may be c.in.
func (ss *session) process(c *conn, data []byte) {
	served := false
	for len(data) > 0 && !c.closing {
		if c.discard > 0 {
			n := int(min(c.discard, int64(len(data))))
			data = data[n:]
			c.discard -= int64(n)
			continue
		}
		n, perr := parseHead(data, &ss.req, ss.s.lim)
		if perr != 0 {
			ss.s.stats.bad.Add(1)
			c.out = appendError(c.out, ss.date, int(perr))
			c.closing = true
			break
		}
		if n == 0 {
			break // incomplete
		}
		ss.serve(c)
		served = true
		c.discard = ss.req.contentLength
		data = data[n:]
	}
	if c.closing || len(data) == 0 {
		c.in = c.in[:0]
		c.headStart = 0
		return
	}
	if served || len(c.in) == 0 { // a new head starts here
		c.headStart = ss.now.UnixNano()
	}
	c.in = append(c.in[:0], data...) // a forward move when data is in c.in
}

// serve runs the handler on ss.req and appends its answer to c.out.
func (ss *session) serve(c *conn) {
	r := &ss.req
	r.Received = ss.now
	w := &ss.resp
	w.reset()
	ok := ss.call(w, r)
	closing := !r.keepAlive || !ok
	c.out = w.appendTo(c.out, ss.date, r.Method == http.MethodHead, closing, r.Minor == 0 && !closing)
	c.closing = closing
}

func (ss *session) call(w *Response, r *Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ss.s.stats.panics.Add(1)
			ss.s.cfg.Logger.Error("http1: handler panic", "panic", p, "method", r.Method, "path", r.Path())
			w.reset()
			w.status = http.StatusInternalServerError
			ok = false
		}
	}()
	ss.s.cfg.Handler.ServeHTTP1(w, r)
	return true
}

// expired reports whether c has outlived its timeout at now.
func (ss *session) expired(c *conn, now int64) bool {
	cfg := &ss.s.cfg
	switch {
	case len(c.in) > 0:
		return now-c.headStart > int64(cfg.HeadTimeout)
	case c.writing || c.discard > 0:
		return now-c.last > int64(cfg.HeadTimeout)
	}
	return now-c.last > int64(cfg.IdleTimeout)
}
