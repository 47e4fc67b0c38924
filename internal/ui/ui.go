// Package ui is rankgate's status page: a few static files (HTML, one small
// vanilla JavaScript file, CSS) embedded in the binary, with no build step and
// nothing fetched from elsewhere. The page reads the gateway's own API —
// families and their periods, the live top of a board, member search, the
// shard → node layout — and the cache hit ratio from /metrics.
//
// It imports the standard library only (embed, net/http), no rankgate package.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// contentSecurityPolicy lets the page load only its own files and talk only
// to its own origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the status page's files at its root: mount it under a
// prefix with http.StripPrefix ("/ui/" → "/"). The page calls the API at
// /v1/... and /metrics on the same origin.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Embedded files carry no modification time, so nothing to revalidate
		// against: ask for a fresh copy, they are small.
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
