package characteristics

// Session is what a client's requests so far say of its habits: the
// session.* characteristics. characteristics/session's Table fills it on the
// log path, in input order, before the rules see the event; elsewhere (the
// decision API, a rule test without it) it is the zero value, Known false,
// and every session.* characteristic is absent.
type Session struct {
	Known bool
	Flags SessionFlags
	// Requests counts the session's requests so far, this event's
	// included; Pages its page views; PagesWithoutAssets the distinct
	// pages (paths without their query) it viewed while it had fetched no
	// asset (0 once one came); PostsWithoutGet its POSTs made before any
	// GET or HEAD.
	Requests, Pages, PagesWithoutAssets, PostsWithoutGet uint32
}

// SessionFlags are the session's yes-or-no characteristics.
type SessionFlags uint8

// Session flags.
const (
	SessionProtoChanged SessionFlags = 1 << iota // HTTP/1.0 and a later version in one session
	SessionRefererNever                          // no request of the session sent a Referer
	SessionCookieNever                           // no request sent a cookie (only where the source carries cookies)
)

func (s *Session) flag(f SessionFlags) (string, bool) {
	if s.Known && s.Flags&f != 0 {
		return "true", true
	}
	return "", false
}

// input returns the session's part of the Rego input document, nil when
// unknown.
func (s *Session) input() map[string]any {
	if !s.Known {
		return nil
	}
	m := map[string]any{
		"requests":             int64(s.Requests),
		"pages":                int64(s.Pages),
		"pages_without_assets": int64(s.PagesWithoutAssets),
		"post_without_get":     int64(s.PostsWithoutGet),
	}
	for _, f := range []struct {
		name string
		f    SessionFlags
	}{{"proto_changed", SessionProtoChanged}, {"referer_never", SessionRefererNever}, {"cookie_never", SessionCookieNever}} {
		if s.Flags&f.f != 0 {
			m[f.name] = true
		}
	}
	return m
}
