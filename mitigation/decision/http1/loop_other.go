//go:build !linux

package http1

import (
	"context"
	"errors"
	"net"
)

// Serve needs Linux's epoll; guardd runs on Linux only.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return errors.ErrUnsupported
}
