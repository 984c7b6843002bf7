package plan

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// GB and GiB are the two units every size is printed in: GB = 10^9 bytes (disk sizes, vendors'
// card sizes), GiB = 2^30 bytes (what nvidia-smi and most allocators report).
const (
	GB  = 1e9
	GiB = 1 << 30
)

// Bytes writes n as "16.06 GB (14.96 GiB)".
func Bytes(n int64) string {
	return fmt.Sprintf("%.2f GB (%.2f GiB)", float64(n)/GB, float64(n)/GiB)
}

// Count writes n with thousands separators: 8,030,261,248.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Write prints the plan: parameters, the memory of each part, the four (precision,
// checkpointing) settings, and with a device size the verdict and the advice.
func (p *Plan) Write(w io.Writer) error {
	in, c := p.In, p.In.Config
	var b strings.Builder
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("memory plan (%s; GB = 10^9 bytes, GiB = 2^30 bytes)\n", in.Section)
	pf("  model: %s, %d layers, hidden %d, intermediate %d, %d heads (%d KV, head dim %d), vocab %s, embeddings %s\n",
		c.ModelType, c.Layers, c.Hidden, c.Intermediate, c.Heads, c.KVHeads, c.HeadDim, Count(int64(c.Vocab)), tiedText(c.TieWordEmbeddings))
	loss := fmt.Sprintf("vocabulary logits at up to %d answer positions", in.AnswerTokens)
	if in.AnswerTokens == 0 {
		loss = "a classification head on the last token"
	}
	pf("  micro-batch: %d x %d tokens, %s, gradient accumulation %d\n", in.Batch, in.SeqLen, loss, in.GradAccumulation)
	pf("  base parameters:       %s\n", Count(p.BaseParams))
	if in.LoRA.Rank > 0 {
		pf("  trainable parameters:  %s (LoRA rank %d on %s", Count(p.TrainableParams), in.LoRA.Rank, strings.Join(targetsOf(c, in.LoRA), ", "))
		if in.HeadParams > 0 {
			pf(", + %s head", Count(in.HeadParams))
		}
		pf(")\n")
		if p.QuantizedParams > 0 {
			dt := weightDType(in.WeightDType)
			pf("  base weights:          %s (frozen: nf4 projections, %s rest)\n", Bytes(p.BaseWeights), dt)
			pf("    nf4 codes:           %s (%s projection weights, 4 bits each)\n", Bytes(p.Codes), Count(p.QuantizedParams))
			pf("    absmax:              %s (8 bits per %d weights + float32 per %d blocks: double quantization)\n", Bytes(p.Absmax), NF4Block, NF4ScaleBlocks)
			pf("    rest:                %s (%s parameters, %s: embeddings, LM head, norms, biases)\n",
				Bytes(p.BaseWeights-p.Codes-p.Absmax), Count(p.BaseParams-p.QuantizedParams), dt)
		} else {
			pf("  base weights:          %s (%s, frozen)\n", Bytes(p.BaseWeights), weightDType(in.WeightDType))
		}
		pf("  adapters and head:     %s (float32)\n", Bytes(p.Trainable))
	} else {
		pf("  trainable parameters:  %s (full fine-tuning)\n", Count(p.TrainableParams))
		pf("  weights:               %s (float32, trainable)\n", Bytes(p.Trainable))
	}
	pf("  gradients:             %s (float32)\n", Bytes(p.Gradients))
	opt := "AdamW moments"
	if in.GradAccumulation > 1 {
		opt += " + gradient accumulator"
	}
	pf("  optimizer state:       %s (float32 %s)\n", Bytes(p.Optimizer), opt)
	pf("  per setting (activations of one micro-batch; total per device):\n")
	for _, v := range p.Variants {
		mark := " "
		if v.Precision == in.Precision && v.Checkpointing == in.Checkpointing {
			mark = "*"
		}
		pf("  %s %-4s checkpointing %-3s  ", mark, v.Precision, onOff(v.Checkpointing))
		if a := attentionText(in, v); a != "" {
			pf("attention %-5s  ", a)
		}
		pf("activations %s", Bytes(v.Activations))
		if v.ConvertedWeights > 0 {
			pf(" + float32 weight copies %s", Bytes(v.ConvertedWeights))
		}
		if v.Dequantized > 0 {
			pf(" + one layer dequantized %s", Bytes(v.Dequantized))
		}
		pf("  total %s\n", Bytes(v.Total))
	}
	quant := ""
	if p.QuantizedParams > 0 {
		quant = ", base quantization nf4"
	}
	if in.Attention == Flash {
		quant += ", attention flash where bf16 (cuDNN's fused attention, train.attention auto or flash on a CUDA card)"
	}
	pf("  (* = configured: precision %s, gradient checkpointing %s%s)\n", in.Precision, onOff(in.Checkpointing), quant)
	if in.Assumed {
		pf("  (this build reads no train.precision or train.gradient_checkpointing: bf16 without checkpointing is assumed, as auto means on a CUDA card)\n")
	}
	if in.DeviceMemory > 0 {
		cur := p.Configured()
		if cur.Total <= in.DeviceMemory {
			pf("  fits: %s of %s (%.0f%%)\n", Bytes(cur.Total), Bytes(in.DeviceMemory), 100*float64(cur.Total)/float64(in.DeviceMemory))
		} else {
			pf("  does not fit: %s needed, the device has %s\n", Bytes(cur.Total), Bytes(in.DeviceMemory))
			pf("  change: %s\n", p.Advice())
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Advice names the smallest change of settings that makes the plan fit DeviceMemory: gradient
// checkpointing, then bf16, then a smaller micro-batch with more accumulation (the same effective
// batch), then a shorter max_seq_len.
func (p *Plan) Advice() string {
	in := p.In
	sec := in.Section
	try := func(mod func(*Inputs)) (*Plan, bool) {
		n := in
		mod(&n)
		q, err := Compute(n)
		if err != nil {
			return nil, false
		}
		return q, q.Configured().Total <= in.DeviceMemory
	}
	var steps []string
	mods := []func(*Inputs){}
	if !in.Checkpointing {
		steps = append(steps, sec+".train.gradient_checkpointing: true (--gradient-checkpointing)")
		mods = append(mods, func(n *Inputs) { n.Checkpointing = true })
		if q, ok := try(chain(mods)); ok {
			return strings.Join(steps, ", ") + " -> " + Bytes(q.Configured().Total)
		}
	}
	if in.Precision != BF16 {
		steps = append(steps, sec+".train.precision: bf16 (--precision bf16)")
		mods = append(mods, func(n *Inputs) { n.Precision = BF16 })
		if q, ok := try(chain(mods)); ok {
			return strings.Join(steps, ", ") + " -> " + Bytes(q.Configured().Total)
		}
	}
	for batch := in.Batch / 2; batch >= 1; batch /= 2 {
		if in.Batch%batch != 0 {
			continue
		}
		acc := in.GradAccumulation * in.Batch / batch
		m := append(append([]func(*Inputs){}, mods...), func(n *Inputs) { n.Batch, n.GradAccumulation = batch, acc })
		if q, ok := try(chain(m)); ok {
			return strings.Join(append(steps, fmt.Sprintf("%s.train.batch_size: %d with %s.train.grad_accumulation: %d (the same %d examples per optimizer step)",
				sec, batch, sec, acc, in.Batch*in.GradAccumulation)), ", ") + " -> " + Bytes(q.Configured().Total)
		}
	}
	for seq := in.SeqLen / 2; seq >= 8; seq /= 2 {
		m := append(append([]func(*Inputs){}, mods...), func(n *Inputs) { n.Batch, n.SeqLen, n.AnswerTokens = 1, seq, min(n.AnswerTokens, seq) })
		if q, ok := try(chain(m)); ok {
			return strings.Join(append(steps, fmt.Sprintf("batch_size 1 and %s.max_seq_len: %d", sec, seq)), ", ") + " -> " + Bytes(q.Configured().Total)
		}
	}
	return "no setting of this recipe fits: the weights and the training state alone need " +
		Bytes(p.BaseWeights+p.Trainable+p.Gradients+p.Optimizer) + "; use a device with more memory or a smaller model"
}

func chain(mods []func(*Inputs)) func(*Inputs) {
	return func(n *Inputs) {
		for _, m := range mods {
			m(n)
		}
	}
}

// attentionText names a setting's attention; only plans that were asked for flash say it, so
// that an eager plan reads as before.
func attentionText(in Inputs, v Variant) string {
	switch {
	case in.Attention != Flash:
		return ""
	case v.Flash:
		return "flash"
	}
	return "eager"
}

func tiedText(tied bool) string {
	if tied {
		return "tied"
	}
	return "untied"
}

func weightDType(d string) string {
	if d == "" {
		return "bfloat16"
	}
	return d
}
