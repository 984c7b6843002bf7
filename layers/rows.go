package layers

import (
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
)

// Decoding graphs keep each hypothesis's cache as its own tensors (a beam's clones share them), so
// a step graph joins the rows' tensors into batches and splits its outputs back into rows.

// SplitRows cuts each [B, ...] node into its B rows and lists them row by row (row 0's nodes, then
// row 1's, ...).
func SplitRows(nodes []*Node, b int) []*Node {
	out := make([]*Node, 0, b*len(nodes))
	for r := range b {
		for _, n := range nodes {
			if b == 1 {
				out = append(out, n)
				continue
			}
			out = append(out, Slice(n, AxisRange(r, r+1)))
		}
	}
	return out
}

// JoinRows is SplitRows' inverse: rows lists b rows of per nodes each (row 0's, then row 1's, ...)
// and it returns per nodes of b rows each.
func JoinRows(rows []*Node, b, per int) []*Node {
	out := make([]*Node, per)
	for c := range per {
		parts := make([]*Node, b)
		for r := range b {
			parts[r] = rows[r*per+c]
		}
		out[c] = parts[0]
		if b > 1 {
			out[c] = Concatenate(parts, 0)
		}
	}
	return out
}
