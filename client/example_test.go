package client_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/rankgate/rankgate/client"
)

// A gateway stand-in for the example: it answers one event and one Top N
// the way rankgate does. Against a real gateway, use its URL
// (make run: http://127.0.0.1:8080).
func exampleGateway() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/events":
			fmt.Fprint(w, `{"event_id":"evt-1","duplicate":false,"period":"2026-W48","boards":[{"board":"learning/2026-W48/national","points":20}]}`)
		case "/v1/boards/learning/current/national/top":
			fmt.Fprint(w, `{"board":"learning/2026-W48/national","source":"primary","as_of":"2026-11-26T10:00:00Z","entries":[{"user":"u42","points":20,"position":0,"rank":1}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
}

func Example() {
	gateway := exampleGateway()
	defer gateway.Close()

	ctx := context.Background()
	c, err := client.New(gateway.URL) // client.WithToken(token) when auth.tokens are configured
	if err != nil {
		log.Fatal(err)
	}
	// An event keeps its id across retries: the gateway counts it once.
	res, err := c.PostEvent(ctx, client.Event{
		EventID: "evt-1", Family: "learning", User: "u42", Delta: client.Int(20),
		Dims: map[string]string{"province": "zhejiang"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Period, res.Boards[0].Points, res.Duplicate)

	board := client.Board{Family: "learning", Period: "current", Dimension: "national"}
	top, err := c.Top(ctx, board, 10, client.ReadOptions{Consistency: "primary"})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range top.Entries {
		fmt.Println(e.Rank, e.User, e.Points)
	}
	// Output:
	// 2026-W48 20 false
	// 1 u42 20
}
