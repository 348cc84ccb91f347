package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// hstsHeader tells browsers to use HTTPS only for a year once they have
// reached the console over it.
const hstsHeader = "max-age=31536000"

// ParseCIDRs reads a comma-separated list of networks ("10.0.0.0/8,
// 192.168.1.7"); a bare address is a network of one.
func ParseCIDRs(list string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			ip := net.ParseIP(f)
			if ip == nil {
				return nil, fmt.Errorf("%q is neither an address nor a network (CIDR such as 10.0.0.0/8)", f)
			}
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a network (CIDR such as 10.0.0.0/8): %w", f, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParsePublicURL checks the URL users reach the console at: http or https
// with a host.
func ParsePublicURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("%q is not a console address: give it as https://host[:port]", raw)
	}
	return u, nil
}

// hostAllowed reports whether a request's Host header names this console:
// an address literal (DNS rebinding needs a name, so an address cannot be
// rebound), a loopback name, or an allowed name (--public-url's host).
func hostAllowed(hostHeader string, allowed map[string]bool) bool {
	h := hostHeader
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || allowed[h]
}

// checkHost refuses requests whose Host is not this console's, so a page on
// another site whose name was rebound to this server's address cannot read
// the console, the API or /metrics. /healthz answers any name: probes use
// whatever address they have, and it tells nothing; so does /metrics when
// it needs its own token, which a rebinding page does not have.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.URL.Path == "/healthz" || (r.URL.Path == "/metrics" && s.metricsToken) || hostAllowed(r.Host, s.allowedHosts) {
			return next(c)
		}
		// Debug: a scan must not flood the log.
		s.log.Debug("request for another host name refused", "client", c.RealIP(), "host_len", len(r.Host))
		return c.String(http.StatusMisdirectedRequest,
			"This server does not answer for this host name. Reach it by its address, a loopback name, or the name given with --public-url.\n")
	}
}

// requireMetricsToken guards /metrics with a bearer token when one is
// configured. Both sides are hashed before the compare so neither the
// content nor the length leaks.
func requireMetricsToken(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(strings.TrimSpace(given)))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kmirror-metrics"`)
			http.Error(w, "missing or wrong metrics token: send Authorization: Bearer <token> (the file given with --metrics-token-file)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
