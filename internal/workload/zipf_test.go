package workload

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestZipfBounds(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10, 1000, 1_000_000, math.MaxInt32} {
		for _, s := range []float64{0, 0.1, 0.5, 0.99, 1, 1.01, 1.5, 3, 10} {
			z, err := NewZipf(n, s)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(n), math.Float64bits(s)))
			for range 20000 {
				if k := z.Sample(r); k < 0 || k >= n {
					t.Fatalf("n=%d s=%g: sample %d out of [0, %d)", n, s, k, n)
				}
			}
		}
	}
}

func TestZipfTableBounds(t *testing.T) {
	for _, n := range []int{1, 2, 7, 50} {
		for _, s := range []float64{0, 0.8, 1, 2} {
			tab, err := NewZipfTable(n, s)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range []float64{0, 1e-12, 0.25, 0.5, 0.999999, math.Nextafter(1, 0)} {
				if k := tab.Quantile(u); k < 0 || k >= n {
					t.Fatalf("n=%d s=%g: Quantile(%g) = %d", n, s, u, k)
				}
			}
			var sum float64
			for k := range n {
				sum += tab.P(k)
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("n=%d s=%g: probabilities add up to %g", n, s, sum)
			}
		}
	}
}

func TestZipfRejectsBadParameters(t *testing.T) {
	for _, c := range []struct {
		n int
		s float64
	}{{0, 1}, {-1, 1}, {10, -0.5}, {10, math.NaN()}, {10, math.Inf(1)}} {
		if _, err := NewZipf(c.n, c.s); err == nil {
			t.Errorf("NewZipf(%d, %g) accepted", c.n, c.s)
		}
		if _, err := NewZipfTable(c.n, c.s); err == nil {
			t.Errorf("NewZipfTable(%d, %g) accepted", c.n, c.s)
		}
	}
}

// TestZipfDistribution checks the sampler against the exact probabilities
// of the table: every rank's frequency within 5 standard deviations.
func TestZipfDistribution(t *testing.T) {
	const draws = 200000
	for _, c := range []struct {
		n int
		s float64
	}{{10, 0}, {10, 0.5}, {10, 1}, {20, 1.2}, {5, 3}} {
		z, _ := NewZipf(c.n, c.s)
		tab, _ := NewZipfTable(c.n, c.s)
		r := rand.New(rand.NewPCG(42, uint64(c.n)))
		counts := make([]int, c.n)
		for range draws {
			counts[z.Sample(r)]++
		}
		for k, got := range counts {
			p := tab.P(k)
			want := p * draws
			sd := math.Sqrt(draws * p * (1 - p))
			if math.Abs(float64(got)-want) > 5*sd+1 {
				t.Errorf("n=%d s=%g rank %d: %d draws, want %.0f ± %.0f", c.n, c.s, k, got, want, 5*sd)
			}
		}
		if c.s > 0 && counts[0] <= counts[c.n-1] {
			t.Errorf("n=%d s=%g: rank 0 is not hotter than the last (%d vs %d)", c.n, c.s, counts[0], counts[c.n-1])
		}
	}
}

func TestZipfTableQuantileEdges(t *testing.T) {
	tab, _ := NewZipfTable(4, 0) // uniform: cdf 0.25, 0.5, 0.75, 1
	tests := []struct {
		u    float64
		want int
	}{{0, 0}, {0.2499, 0}, {0.25, 1}, {0.5, 2}, {0.74, 2}, {0.75, 3}, {0.9999, 3}}
	for _, tt := range tests {
		if got := tab.Quantile(tt.u); got != tt.want {
			t.Errorf("Quantile(%g) = %d, want %d", tt.u, got, tt.want)
		}
	}
}

func TestUnitHash(t *testing.T) {
	seen := map[float64]bool{}
	for i := range 10000 {
		u := UnitHash(uint64(i), 7)
		if u < 0 || u >= 1 {
			t.Fatalf("UnitHash(%d) = %g", i, u)
		}
		if UnitHash(uint64(i), 7) != u {
			t.Fatal("UnitHash is not deterministic")
		}
		seen[u] = true
	}
	if len(seen) < 9990 {
		t.Errorf("only %d distinct values of 10000", len(seen))
	}
}
