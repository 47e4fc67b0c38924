// Package merge k-way merges slices that are each already sorted, and cuts
// the result at a limit. It is the combine step of a sharded read: every
// shard returns its slice in board order and the merged result is the one an
// unsharded board holding the same data would return.
//
// Merging is stable: elements that compare equal (neither is less than the
// other) come out in list order, so elements of lists[i] precede equal
// elements of lists[j] for i < j, and each list keeps its own order.
//
// It imports the standard library only: no Redis, no HTTP, no other rankgate
// package.
package merge

import "slices"

// Merge appends to dst[:0] the first limit elements of the union of lists
// (each sorted by less), in order. Equal elements (neither less) keep list
// order: elements of lists[i] before lists[j] for i<j. limit<0 means no limit.
//
// The result reuses dst's backing array when it is large enough, so dst must
// not overlap any of the lists. An empty result is dst[:0] (nil if dst is
// nil). Merging more than two non-empty lists allocates the merge state; a
// Merger reuses it.
func Merge[T any](dst []T, lists [][]T, limit int, less func(a, b T) bool) []T {
	var m Merger[T]
	m.init(less, lists)
	return m.Merge(dst, lists, limit)
}

// Last appends to dst[:0] the last n elements of the order Merge produces for
// lists, in that order; n<0 means all elements. It serves "the n entries just
// before a position", where each list is the tail of one shard ending at that
// position. dst must not overlap any of the lists.
func Last[T any](dst []T, lists [][]T, n int, less func(a, b T) bool) []T {
	var m Merger[T]
	m.init(less, lists)
	return m.Last(dst, lists, n)
}

// Merger merges like Merge but keeps its internal state (a loser tree over
// the list heads) between calls: after warm-up, a call whose dst has enough
// capacity does not allocate. A Merger is not safe for concurrent use. Create
// it with NewMerger.
type Merger[T any] struct {
	less func(a, b T) bool
	// cur holds the unconsumed rest of each non-empty input list, in input
	// order. It is cleared after every call so no caller memory is retained.
	cur [][]T
	// tree is the loser tree over cur (k lists): tree[1:k] hold the losers
	// at the internal nodes (the winner is kept aside) and tree[k:2k] holds
	// the leaves while the tree is built. Last uses it mirrored.
	tree []int
}

// NewMerger returns a Merger that orders elements by less, which must be a
// strict weak ordering (as for sort.Slice).
func NewMerger[T any](less func(a, b T) bool) *Merger[T] {
	return &Merger[T]{less: less}
}

// init prepares a one-shot Merger for lists, sizing its list state once.
func (m *Merger[T]) init(less func(a, b T) bool, lists [][]T) {
	m.less = less
	m.cur = make([][]T, 0, len(lists))
}

// Merge is the package function Merge with m's ordering.
func (m *Merger[T]) Merge(dst []T, lists [][]T, limit int) []T {
	total := m.load(lists)
	n := total
	if limit >= 0 && limit < n {
		n = limit
	}
	dst = dst[:0]
	if n > 0 {
		dst = slices.Grow(dst, n)
		switch len(m.cur) {
		case 1:
			dst = append(dst, m.cur[0][:n]...)
		case 2:
			dst = merge2(dst, m.cur[0], m.cur[1], n, m.less)
		default:
			dst = m.mergeK(dst, n)
		}
	}
	m.unload()
	return dst
}

// Last is the package function Last with m's ordering. It merges from the
// ends of the lists backwards, so it costs the same as a Merge of n elements.
func (m *Merger[T]) Last(dst []T, lists [][]T, n int) []T {
	total := m.load(lists)
	if n < 0 || n > total {
		n = total
	}
	dst = dst[:0]
	if n > 0 {
		dst = slices.Grow(dst, n)[:n]
		switch len(m.cur) {
		case 1:
			l := m.cur[0]
			copy(dst, l[len(l)-n:])
		case 2:
			last2(dst, m.cur[0], m.cur[1], m.less)
		default:
			m.lastK(dst)
		}
	}
	m.unload()
	return dst
}

// load sets m.cur to the non-empty lists, in order, and returns how many
// elements they hold.
func (m *Merger[T]) load(lists [][]T) int {
	if cap(m.cur) < len(lists) {
		m.cur = make([][]T, 0, len(lists))
	}
	total := 0
	for _, l := range lists {
		if len(l) > 0 {
			m.cur = append(m.cur, l)
			total += len(l)
		}
	}
	return total
}

// unload clears m.cur, so that m retains no caller memory between calls.
func (m *Merger[T]) unload() {
	clear(m.cur)
	m.cur = m.cur[:0]
}

// merge2 appends the first n elements of the merge of a and b to dst.
// It needs one comparison per element: b's head is taken only when it is
// strictly less than a's, which keeps ties in list order.
func merge2[T any](dst, a, b []T, n int, less func(a, b T) bool) []T {
	i, j := 0, 0
	for left := n; left > 0; left-- {
		if i == len(a) {
			return append(dst, b[j:j+left]...)
		}
		if j == len(b) {
			return append(dst, a[i:i+left]...)
		}
		if less(b[j], a[i]) {
			dst = append(dst, b[j])
			j++
		} else {
			dst = append(dst, a[i])
			i++
		}
	}
	return dst
}

// mergeK appends the first n elements of the merge of m.cur (k >= 3
// non-empty lists holding at least n elements) to dst, using a loser tree:
// each output element costs ceil(log2 k) comparisons or fewer.
//
// The tree orders lists by (head, list index), with an exhausted list after
// every other one. That is a strict total order, so the winner is always the
// next element of the stable merge, whatever the shape of the tree. Comparing
// list a with list b needs one call of less: if a < b, a wins unless b's head
// is strictly less; if a > b, a wins only if its head is strictly less.
func (m *Merger[T]) mergeK(dst []T, n int) []T {
	cur, less := m.cur, m.less
	k := len(cur)
	if cap(m.tree) < 2*k {
		m.tree = make([]int, 2*k)
	}
	t := m.tree[:2*k]

	// Build bottom-up, first storing the winner of every subtree at its
	// node, then replacing each internal node's winner by the loser of its
	// match: the child's winner that is not the node's winner. Going top-down
	// keeps the children's winners intact until their parent is done.
	for i := range k {
		t[k+i] = i
	}
	for node := k - 1; node > 0; node-- {
		a, b := t[2*node], t[2*node+1]
		if a < b {
			if less(cur[b][0], cur[a][0]) {
				a = b
			}
		} else if !less(cur[a][0], cur[b][0]) {
			a = b
		}
		t[node] = a
	}
	w := toLosers(t, k)

	active := k
	for left := n; left > 0; left-- {
		if active == 1 {
			// Only the winner's list is left: copy the rest of it.
			return append(dst, cur[w][:left]...)
		}
		l := cur[w]
		dst = append(dst, l[0])
		l = l[1:]
		cur[w] = l
		if len(l) == 0 {
			active--
			// An exhausted list loses every match: climb to the root,
			// letting the best loser on the path take over.
			for node := (w + k) >> 1; node > 0; node >>= 1 {
				if o := t[node]; len(cur[o]) > 0 && (len(cur[w]) == 0 || beats(cur, less, o, w)) {
					t[node], w = w, o
				}
			}
			continue
		}
		for node := (w + k) >> 1; node > 0; node >>= 1 {
			o := t[node]
			if len(cur[o]) == 0 {
				continue
			}
			if o < w {
				if !less(l[0], cur[o][0]) {
					t[node], w, l = w, o, cur[o]
				}
			} else if less(cur[o][0], l[0]) {
				t[node], w, l = w, o, cur[o]
			}
		}
	}
	return dst
}

// beats reports whether list a (non-empty) comes before list b (non-empty)
// in (head, index) order.
func beats[T any](cur [][]T, less func(a, b T) bool, a, b int) bool {
	if a < b {
		return !less(cur[b][0], cur[a][0])
	}
	return less(cur[a][0], cur[b][0])
}

// last2 fills dst with the last len(dst) elements of the merge of a and b,
// walking both lists backwards: on a tie b's element comes later, so a's is
// taken only when b's is strictly less.
func last2[T any](dst, a, b []T, less func(a, b T) bool) {
	i, j := len(a)-1, len(b)-1
	for p := len(dst) - 1; p >= 0; p-- {
		if i < 0 {
			copy(dst[:p+1], b[j-p:j+1])
			return
		}
		if j < 0 {
			copy(dst[:p+1], a[i-p:i+1])
			return
		}
		if less(b[j], a[i]) {
			dst[p] = a[i]
			i--
		} else {
			dst[p] = b[j]
			j--
		}
	}
}

// lastK fills dst with the last len(dst) elements of the merge of m.cur
// (k >= 3 non-empty lists holding at least len(dst) elements), from the back.
// It is mergeK mirrored: the loser tree orders lists by (tail, list index)
// descending, an exhausted list after every other one. List a's tail comes
// later than list b's if a > b and it is not strictly less, or if a < b and
// b's is strictly less.
func (m *Merger[T]) lastK(dst []T) {
	cur, less := m.cur, m.less
	k := len(cur)
	if cap(m.tree) < 2*k {
		m.tree = make([]int, 2*k)
	}
	t := m.tree[:2*k]
	tail := func(i int) T { return cur[i][len(cur[i])-1] }

	for i := range k {
		t[k+i] = i
	}
	for node := k - 1; node > 0; node-- {
		a, b := t[2*node], t[2*node+1]
		if a > b {
			if less(tail(a), tail(b)) {
				a = b
			}
		} else if !less(tail(b), tail(a)) {
			a = b
		}
		t[node] = a
	}
	w := toLosers(t, k)

	active := k
	for p := len(dst) - 1; p >= 0; p-- {
		l := cur[w]
		if active == 1 {
			copy(dst[:p+1], l[len(l)-p-1:])
			return
		}
		dst[p] = l[len(l)-1]
		l = l[:len(l)-1]
		cur[w] = l
		if len(l) == 0 {
			active--
			for node := (w + k) >> 1; node > 0; node >>= 1 {
				if o := t[node]; len(cur[o]) > 0 && (len(cur[w]) == 0 || laterTail(cur, less, o, w)) {
					t[node], w = w, o
				}
			}
			continue
		}
		for node := (w + k) >> 1; node > 0; node >>= 1 {
			o := t[node]
			lo := cur[o]
			if len(lo) == 0 {
				continue
			}
			if laterTail(cur, less, o, w) {
				t[node], w = w, o
			}
		}
	}
}

// laterTail reports whether the tail of list a (non-empty) comes after the
// tail of list b (non-empty) in the merged order.
func laterTail[T any](cur [][]T, less func(a, b T) bool, a, b int) bool {
	ta, tb := cur[a][len(cur[a])-1], cur[b][len(cur[b])-1]
	if a > b {
		return !less(ta, tb)
	}
	return less(tb, ta)
}

// toLosers turns a winner tree (t[node] = winner of its two children, leaves
// at k..2k-1) into a loser tree in place: every inner node keeps the loser
// of its match instead. It answers the overall winner, which t[1] held.
func toLosers(t []int, k int) int {
	w := t[1]
	for node := 1; node < k; node++ {
		win, loser := t[node], t[2*node]
		if loser == win {
			loser = t[2*node+1]
		}
		t[node] = loser
	}
	return w
}
