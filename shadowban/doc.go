// Package shadowban renders the answers a shadow-banned client gets: a
// plausible success, per route, while nothing reaches the upstream. The abuser
// sees their spam accepted, their invitations sent, their scraping succeed,
// and learns nothing they could adapt to.
//
// A Route matches a method and a path (exact, or a prefix ending in '*') and
// gives a status (default 200), a content type and a body. Bodies may hold
// placeholders filled per response, so two answers do not look canned:
// ${id} (a random 16-hex-digit id), ${uuid}, ${now} (RFC 3339) and
// ${unix} (seconds). Routes are tried in order; the default route answers
// everything else (an empty 200 `{}` unless configured).
//
// An answer carries the route's status, Content-Type, Content-Length and the
// configured headers (Config.Headers, then the route's; values take the same
// placeholders), and nothing else: no Cache-Control or other header the real
// application's answer could lack, which a careful abuser would notice.
//
// Set replaces the routes of a running Responder (a reload): each answer is
// written from one set of routes, the old or the new.
package shadowban
