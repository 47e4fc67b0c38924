package workload

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestMemberAssignmentPinned pins which province and class the first members
// of the default shape belong to. Boards prefilled by an earlier version of
// the load tool are read by later runs and modelled by the planner; a change
// of the hash, the salts or the table would silently move members.
func TestMemberAssignmentPinned(t *testing.T) {
	t.Parallel()
	sh := DefaultShape()
	dims, err := sh.Dims()
	if err != nil {
		t.Fatal(err)
	}
	if len(dims) != 2 || dims[0].Type != BoardProvince || dims[1].Type != BoardClass {
		t.Fatalf("dims = %+v, want province then class", dims)
	}
	want := [][]int{
		{1, 0, 0, 1, 0, 6, 3, 0, 4, 0, 1, 0, 2, 1, 0, 3},
		{12, 30, 0, 0, 6, 18, 24, 0, 46, 28, 13, 4, 7, 0, 30, 1},
	}
	for di, d := range dims {
		var got []int
		for i := range 16 {
			got = append(got, d.ValueOf(i))
		}
		if !slices.Equal(got, want[di]) {
			t.Errorf("%s values of members 0..15 = %v, want %v", d.Type, got, want[di])
		}
	}
	if got := dims[0].ValueName(3); got != "p3" {
		t.Errorf("ValueName(3) = %q, want p3", got)
	}
	if got := string(sh.AppendMemberName([]byte("x"), 42)); got != "xlt42" {
		t.Errorf("AppendMemberName = %q, want xlt42", got)
	}
}

// TestDimsFollowZipf: over many members, the share of each value follows
// the Zipf table within 5 standard deviations, and a dimension without
// values is left out.
func TestDimsFollowZipf(t *testing.T) {
	t.Parallel()
	sh := Shape{Members: 200000, Provinces: 0, Classes: 10, BoardSkew: 1.2}
	dims, err := sh.Dims()
	if err != nil {
		t.Fatal(err)
	}
	if len(dims) != 1 || dims[0].Type != BoardClass {
		t.Fatalf("dims = %+v, want class only", dims)
	}
	d := dims[0]
	counts := make([]int, d.N)
	for i := range sh.Members {
		counts[d.ValueOf(i)]++
	}
	n := float64(sh.Members)
	for k, got := range counts {
		p := d.Table.P(k)
		sd := math.Sqrt(n * p * (1 - p))
		if math.Abs(float64(got)-n*p) > 5*sd+1 {
			t.Errorf("value %d: %d members, want %.0f ± %.0f", k, got, n*p, 5*sd)
		}
	}
}

func TestHarmonic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		n    int
		s    float64
		want float64
	}{
		{"uniform", 3, 0, 3},
		{"s=1", 3, 1, 1 + 0.5 + 1.0/3},
		{"s=2", 2, 2, 1.25},
	}
	for _, tt := range tests {
		if got := Harmonic(tt.n, tt.s); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: Harmonic(%d, %g) = %g, want %g", tt.name, tt.n, tt.s, got, tt.want)
		}
	}
	// The table's probabilities are 1/(k+1)^s / H.
	z, _ := NewZipfTable(4, 1)
	h := Harmonic(4, 1)
	for k := range 4 {
		if math.Abs(z.P(k)-1/float64(k+1)/h) > 1e-12 {
			t.Errorf("P(%d) = %g, want %g", k, z.P(k), 1/float64(k+1)/h)
		}
	}
}

func TestParseMix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []string // name:op:weight:board
		wantErr string
	}{
		{name: "plain", in: "event=20,top=50", want: []string{"event:event:20:", "top:top:50:any"}},
		{name: "spaces and board", in: " batch = 1 , top@national=3.5 ", want: []string{"batch:batch:1:", "top@national:top:3.5:national"}},
		{name: "empty", in: "", wantErr: "empty"},
		{name: "no weight", in: "top", wantErr: "want op=weight"},
		{name: "negative", in: "top=-1", wantErr: "weight"},
		{name: "not a number", in: "top=x", wantErr: "weight"},
		{name: "NaN", in: "top=NaN", wantErr: "weight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, err := ParseMix(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range ops {
				got = append(got, o.Name+":"+o.Op+":"+strconv.FormatFloat(o.Weight, 'g', -1, 64)+":"+o.Board)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFillDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   OpSpec
		want OpSpec
	}{
		{"top", OpSpec{Op: OpTop}, OpSpec{Name: "top", Op: OpTop, Board: BoardAny, Limit: 100}},
		{"page", OpSpec{Op: OpPage}, OpSpec{Name: "page", Op: OpPage, Board: BoardAny, Limit: 50, Depth: 5}},
		{"batch has no board", OpSpec{Op: OpBatch}, OpSpec{Name: "batch", Op: OpBatch, Batch: 100}},
		{"around", OpSpec{Op: OpAround}, OpSpec{Name: "around", Op: OpAround, Board: BoardAny, Radius: 5}},
		{"lookup", OpSpec{Op: OpLookup}, OpSpec{Name: "lookup", Op: OpLookup, Board: BoardAny, Users: 20}},
		{"set values kept", OpSpec{Name: "t10", Op: OpTop, Board: BoardNational, Limit: 10}, OpSpec{Name: "t10", Op: OpTop, Board: BoardNational, Limit: 10}},
	}
	for _, tt := range tests {
		got := tt.in
		got.FillDefaults()
		if got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*Shape, *[]OpSpec)
		want   string // "" = valid
	}{
		{"defaults", func(*Shape, *[]OpSpec) {}, ""},
		{"no family", func(s *Shape, _ *[]OpSpec) { s.Family = "" }, "family: required"},
		{"too many members", func(s *Shape, _ *[]OpSpec) { s.Members = MaxMembers + 1 }, "members: must be within"},
		{"prefix with a colon", func(s *Shape, _ *[]OpSpec) { s.MemberPrefix = "a:b" }, "member_prefix"},
		{"NaN skew", func(s *Shape, _ *[]OpSpec) { s.MemberSkew = math.NaN() }, "member_skew"},
		{"board skew too large", func(s *Shape, _ *[]OpSpec) { s.BoardSkew = 11 }, "board_skew"},
		{"delta 0", func(s *Shape, _ *[]OpSpec) { s.DeltaMax = 0 }, "delta_max"},
		{"no ops", func(_ *Shape, o *[]OpSpec) { *o = nil }, "ops: at least one"},
		{"unknown op", func(_ *Shape, o *[]OpSpec) { (*o)[0].Op = "delete" }, "ops[0].op: must be one of"},
		{"twice the same name", func(_ *Shape, o *[]OpSpec) { *o = append(*o, Op(OpTop, 1)) }, "used twice"},
		{"weights add to 0", func(_ *Shape, o *[]OpSpec) { *o = []OpSpec{Op(OpTop, 0)} }, "more than 0"},
		{"NaN weight", func(_ *Shape, o *[]OpSpec) { (*o)[0].Weight = math.NaN() }, "ops[0].weight"},
		{"board on a write", func(_ *Shape, o *[]OpSpec) { (*o)[0].Board = BoardNational }, "ops[0].board: writes go"},
		{"province read without provinces", func(s *Shape, o *[]OpSpec) { s.Provinces = 0; (*o)[2].Board = BoardProvince }, "province boards need"},
		{"consistency on a write", func(_ *Shape, o *[]OpSpec) { (*o)[0].Consistency = "primary" }, "is for reads"},
		{"bad consistency", func(_ *Shape, o *[]OpSpec) { (*o)[2].Consistency = "strong" }, "must be cached, replica or primary"},
		{"top limit 0", func(_ *Shape, o *[]OpSpec) { (*o)[2].Limit = 0 }, "ops[2].limit"},
		{"page depth 0", func(_ *Shape, o *[]OpSpec) { (*o)[5].Depth = 0 }, "ops[5].depth"},
		{"batch too big", func(_ *Shape, o *[]OpSpec) { (*o)[1].Batch = 1001 }, "ops[1].batch"},
		{"radius too big", func(_ *Shape, o *[]OpSpec) { (*o)[4].Radius = 101 }, "ops[4].radius"},
		{"lookup 0 users", func(_ *Shape, o *[]OpSpec) { (*o)[6].Users = 0 }, "ops[6].users"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh, ops := DefaultShape(), DefaultOps()
			tt.mutate(&sh, &ops)
			errs := append(sh.Validate(), ValidateOps(ops, &sh)...)
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			all := strings.Join(msgs, "\n")
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Fatalf("want valid, got:\n%s", all)
			case tt.want != "" && !strings.Contains(all, tt.want):
				t.Fatalf("want an error containing %q, got:\n%s", tt.want, all)
			}
		})
	}
}

func BenchmarkDimValueOf(b *testing.B) {
	sh := DefaultShape()
	dims, _ := sh.Dims()
	var sink int
	for i := 0; b.Loop(); i++ {
		sink += dims[1].ValueOf(i)
	}
	_ = sink
}

func TestDecodeOver(t *testing.T) {
	t.Parallel()
	type doc struct {
		Shape `yaml:",inline"`
		Ops   []OpSpec `yaml:"ops"`
	}
	tests := []struct {
		name    string
		yaml    string
		strict  bool
		wantErr string
		check   func(t *testing.T, d doc)
	}{
		{name: "keys left out keep their values, the mix stays", yaml: "members: 500\n", check: func(t *testing.T, d doc) {
			if d.Members != 500 || d.Family != "learning" || len(d.Ops) != len(DefaultOps()) {
				t.Errorf("got members %d family %q, %d ops", d.Members, d.Family, len(d.Ops))
			}
		}},
		{name: "listed ops replace the mix and get defaults", yaml: "ops: [{op: top, weight: 1}]\n", check: func(t *testing.T, d doc) {
			if len(d.Ops) != 1 || d.Ops[0] != (OpSpec{Name: "top", Op: OpTop, Weight: 1, Board: BoardAny, Limit: 100}) {
				t.Errorf("ops = %+v", d.Ops)
			}
		}},
		{name: "empty document", yaml: "", check: func(t *testing.T, d doc) {
			if len(d.Ops) != len(DefaultOps()) || d.Members != DefaultShape().Members {
				t.Errorf("an empty document changed the defaults: %+v", d)
			}
		}},
		{name: "unknown key ignored when not strict", yaml: "gateway: http://x\n"},
		{name: "unknown key refused when strict", yaml: "gateway: http://x\n", strict: true, wantErr: "gateway: unknown key (line 1; known keys: "},
		{name: "known keys are listed, inline ones included", yaml: "gateway: http://x\n", strict: true, wantErr: "known keys: board_skew, classes, delta_max, family, member_prefix, member_skew, members, ops, provinces)"},
		{name: "an unknown key inside a list names its place", yaml: "members: 5\nops:\n  - {op: top, weight: 1}\n  - {op: top, weigth: 1}\n", strict: true,
			wantErr: "ops[1].weigth: unknown key (line 4;"},
		{name: "every unknown key at once", yaml: "membres: 5\nops: [{op: top, limt: 3}]\n", strict: true, wantErr: "membres: unknown key (line 1;"},
		{name: "every unknown key at once, the second", yaml: "membres: 5\nops: [{op: top, limt: 3}]\n", strict: true, wantErr: "ops[0].limt: unknown key (line 2;"},
		{name: "an alias is checked as what it stands for", yaml: "ops: [&o {op: top, bad: 1}, *o]\n", strict: true, wantErr: "ops[1].bad: unknown key (line 1;"},
		{name: "a strict document with known keys only decodes", yaml: "members: 7\nops: [{op: top, weight: 2, limit: 10}]\n", strict: true, check: func(t *testing.T, d doc) {
			if d.Members != 7 || len(d.Ops) != 1 || d.Ops[0].Limit != 10 {
				t.Errorf("got %+v", d)
			}
		}},
		{name: "a bad document keeps the mix", yaml: "ops: [{op: top, weight: x}]\n", wantErr: "cannot unmarshal", check: func(t *testing.T, d doc) {
			if len(d.Ops) != len(DefaultOps()) {
				t.Errorf("mix after a failed decode: %+v", d.Ops)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := doc{Shape: DefaultShape(), Ops: DefaultOps()}
			err := DecodeOver([]byte(tt.yaml), &d, &d.Ops, tt.strict)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, d)
			}
		})
	}
}
