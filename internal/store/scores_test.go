package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

func TestScoresDistinguishAbsentFromZero(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 10*time.Second)
	b := shard.Board{Family: "scores", Period: "all", DimType: shard.National}
	key, empty := e.layout.ZKey(b, 0, 2), e.layout.ZKey(b, 1, 2)
	if err := e.c.ZAdd(ctx, key, redis.Z{Score: 0, Member: "zero"}, redis.Z{Score: 5, Member: "five"},
		redis.Z{Score: -3, Member: "neg"}, redis.Z{Score: 9007199254740991, Member: "big"}).Err(); err != nil {
		t.Fatal(err)
	}

	// go-redis speaks RESP3 by default (ZMSCORE answers doubles); RESP2
	// answers bulk strings. Both must parse the same.
	for _, proto := range []int{3, 2} {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testcluster.Addrs(t), Protocol: proto,
			DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second})
		t.Cleanup(func() { _ = c.Close() })
		s, err := store.New(c, nil, store.Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name       string
			key        string
			members    []string
			wantScores []int64
			wantOK     []bool
		}{
			{"present and absent", key, []string{"zero", "absent", "five", "neg", "big"},
				[]int64{0, 0, 5, -3, 9007199254740991}, []bool{true, false, true, true, true}},
			{"only absent", key, []string{"nobody"}, []int64{0}, []bool{false}},
			{"only zero", key, []string{"zero"}, []int64{0}, []bool{true}},
			{"absent key", empty, []string{"zero", "five"}, []int64{0, 0}, []bool{false, false}},
		}
		for _, tc := range cases {
			scores, ok, err := s.Scores(ctx, tc.key, tc.members, false)
			if err != nil {
				t.Errorf("RESP%d %s: %v", proto, tc.name, err)
				continue
			}
			if !slices.Equal(scores, tc.wantScores) || !slices.Equal(ok, tc.wantOK) {
				t.Errorf("RESP%d %s: scores %v ok %v, want %v %v", proto, tc.name, scores, ok, tc.wantScores, tc.wantOK)
			}
		}
	}
}
