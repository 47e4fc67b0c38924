// Package ui is rankgate's status page: a few static files (HTML, small
// vanilla JavaScript files, CSS) embedded in the binary, with no build step and
// nothing fetched from elsewhere. The page reads the gateway's own API —
// families and their periods, the boards of each current period (it opens
// on the one with the most members), the live top of a board, member
// search, the shard → node layout — and, from /metrics, the cache hit ratio
// and each node's used memory and ops/s as the cluster monitor polled them.
//
// Its big-screen page, live/{family}/{period}/{dimension}, shows one live
// board for a TV: it subscribes to the board's live stream (GET
// /v1/boards/.../live, opened with a ticket from POST /v1/tickets) and shows
// rank changes as they happen. The status page links to it.
//
// It imports the standard library only (embed, net/http), no rankgate package.
package ui

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"strings"
	"time"
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
	livePage, err := fs.ReadFile(sub, "live.html")
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Embedded files carry no modification time, so nothing to revalidate
		// against: ask for a fresh copy, they are small.
		h.Set("Cache-Control", "no-cache")
		if rest, ok := strings.CutPrefix(r.URL.Path, "/live/"); ok {
			// live/{family}/{period}/{dimension}: one page for every board;
			// its script reads the board from the path.
			if !liveBoardPath(rest) {
				http.NotFound(w, r)
				return
			}
			http.ServeContent(w, r, "live.html", time.Time{}, bytes.NewReader(livePage))
			return
		}
		files.ServeHTTP(w, r)
	})
}

// liveBoardPath reports whether p is "{family}/{period}/{dimension}": three
// non-empty segments.
func liveBoardPath(p string) bool {
	parts := strings.Split(p, "/")
	if len(parts) != 3 {
		return false
	}
	for _, s := range parts {
		if s == "" {
			return false
		}
	}
	return true
}
