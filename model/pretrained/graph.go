package pretrained

import (
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/tracksum/tracksum/layers"
)

// The graphs read batches padded on the right (position t of a row is its t-th token), so that
// transformers' positions 0..T-1 hold for every row; the padding is masked out of attention.

// gatherPositions picks hidden[b, pos[b, k], :] for hidden [B, T, H] and pos [B, K] (int32):
// [B, K, H]. A one-hot product rather than a gather: it differentiates on every backend, and
// costs B*K*T*H, small next to the model.
func gatherPositions(hidden, pos *Node) *Node {
	t := hidden.Shape().Dimensions[1]
	oh := OneHot(pos, t, hidden.DType())
	return Einsum("bkt,bth->bkh", oh, hidden)
}

// tokenNLL is the weighted mean negative log-likelihood of the targets tgt [B, K] (int32) under
// logits [B, K, V], with weights w [B, K] (0 outside the answer): sum(w * nll) / max(sum(w), 1e-6).
// With weights 1 on the answer tokens it is transformers' causal LM loss on the answer only.
//
// On the Go backend (float32 logits) the cross-entropy is layers.CrossEntropyRows, whose gradient
// makes a few passes over the logits where LogSoftmax's makes about ten.
func tokenNLL(logits, tgt, w *Node) *Node {
	if logits.DType() == dtypes.Float32 && layers.DecoderFastPath(logits.Graph(), dtypes.Float32) {
		dims := logits.Shape().Dimensions
		b, k, v := dims[0], dims[1], dims[2]
		// Targets outside the vocabulary (none expected; their weight is what counts) read row 0.
		t := ConvertDType(Reshape(tgt, b*k), dtypes.Int32)
		inVocab := LogicalAnd(GreaterOrEqual(t, ScalarZero(t.Graph(), dtypes.Int32)), LessThan(t, Const(t.Graph(), int32(v))))
		t = Where(inVocab, t, ZerosLike(t))
		nll := Reshape(layers.CrossEntropyRows(Reshape(logits, b*k, v), t), b, k)
		w = ConvertDType(w, dtypes.Float32)
		return Div(ReduceAllSum(Mul(nll, w)), Max(ReduceAllSum(w), Scalar(w.Graph(), dtypes.Float32, 1e-6)))
	}
	logp := LogSoftmax(logits, -1)
	oh := OneHot(tgt, logits.Shape().Dimensions[2], logp.DType())
	nll := Neg(ReduceSum(Mul(logp, oh), -1)) // [B, K]
	w = ConvertDType(w, nll.DType())
	return Div(ReduceAllSum(Mul(nll, w)), Max(ReduceAllSum(w), Scalar(w.Graph(), nll.DType(), 1e-6)))
}

// weightedBCE is the weighted mean binary cross-entropy of logits [B] against targets y [B] in
// {0, 1} with weights w [B]: softplus(x) - y*x is -log sigmoid(x) for y=1 and -log(1-sigmoid(x))
// for y=0, stable for any x.
func weightedBCE(logits, y, w *Node) *Node {
	y = ConvertDType(y, logits.DType())
	w = ConvertDType(w, logits.DType())
	l := Sub(Softplus(logits), Mul(y, logits))
	return Div(ReduceAllSum(Mul(l, w)), Max(ReduceAllSum(w), Scalar(w.Graph(), logits.DType(), 1e-6)))
}

// maskOf turns the [B, T] mask input into float32.
func maskOf(mask *Node) *Node { return ConvertDType(mask, dtypes.Float32) }
