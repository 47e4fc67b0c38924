package gateway

import (
	"errors"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
)

func TestWriteUnavailableNamesOutOfMemory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		title string
		err   error
		want  string
	}{
		{"OOM", errors.New("OOM command not allowed when used memory > 'maxmemory'."), "out of memory"},
		{"other", errors.New("i/o timeout"), "taking achievement numbers"},
	}
	for _, c := range cases {
		err := writeUnavailable(c.err, "taking achievement numbers for %s", "f/all")
		var re *rank.Error
		if !errors.As(err, &re) || re.Code != rank.CodeUnavailable || !strings.Contains(re.Message, c.want) || !errors.Is(err, c.err) {
			t.Errorf("%s: %v", c.title, err)
		}
	}
}
