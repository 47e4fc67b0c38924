package gateway

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/store"
)

func TestWriteUnavailableNamesTheCause(t *testing.T) {
	t.Parallel()
	cases := []struct {
		title string
		err   error
		want  string
	}{
		{"OOM", fmt.Errorf("incrby: %w", store.ErrOOM), "out of memory"},
		{"OOM text without the sentinel", errors.New("OOM command not allowed when used memory > 'maxmemory'."), "taking achievement numbers"},
		{"other", errors.New("i/o timeout"), "taking achievement numbers"},
		{"not replicated", fmt.Errorf("apply script on f:all:0: %w", store.ErrNotReplicated), "not replicated yet; retrying with the same event id is safe"},
	}
	for _, c := range cases {
		err := writeUnavailable(c.err, "taking achievement numbers for %s", "f/all")
		var re *rank.Error
		if !errors.As(err, &re) || re.Code != rank.CodeUnavailable || !strings.Contains(re.Message, c.want) || !errors.Is(err, c.err) {
			t.Errorf("%s: %v", c.title, err)
		}
	}
}
