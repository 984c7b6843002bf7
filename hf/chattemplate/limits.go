package chattemplate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"time"
	"unsafe"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// Chat templates come from downloaded snapshots, and Jinja is a programming language: a template
// can recurse until the Go stack overflows (a fatal error, not a panic), build a string of
// gigabytes with one '*', or loop for hours. gonja has no limits, so this file adds them around
// it: after parsing, the syntax tree is instrumented (a budget check at the start of every loop
// body, macro body and call block; every '*', '+' and '~' routed through a size check; every
// output expression counted), filters and str methods are wrapped, and range is replaced by a
// bounded one. Each check consults the render's budget (steps, bytes built, stack depth, time,
// cancellation), so a hostile template fails with one line instead of killing the process.

// ErrLimit is returned (wrapped, with the file name) when rendering exceeds a Limits bound or
// its context is cancelled.
var ErrLimit = errors.New("chat template limit")

// Limits bound one rendering. Zero fields take DefaultLimits' values.
type Limits struct {
	// MaxOutput bounds the rendered text, in bytes.
	MaxOutput int
	// MaxAlloc bounds the bytes of all the strings and lists the template builds (operators,
	// filters, output expressions, macro results), summed over the rendering.
	MaxAlloc int
	// MaxSteps bounds loop iterations, macro calls, filter calls, operations and the numbers
	// range() makes, together (gonja materializes a loop's items first, a few µs each).
	MaxSteps int
	// MaxDepth bounds the renderer's Go stack, in frames: macro recursion, recursive loops and
	// caller() nest there (a few dozen frames a level).
	MaxDepth int
	// Timeout bounds the rendering's wall time.
	Timeout time.Duration
}

// DefaultLimits are far above what real chat templates need (a few KB of output, tens of
// iterations) and far below what would hurt the process.
func DefaultLimits() Limits {
	return Limits{MaxOutput: 8 << 20, MaxAlloc: 256 << 20, MaxSteps: 100_000, MaxDepth: 5_000, Timeout: 10 * time.Second}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxOutput <= 0 {
		l.MaxOutput = d.MaxOutput
	}
	if l.MaxAlloc <= 0 {
		l.MaxAlloc = d.MaxAlloc
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	return l
}

// Names the instrumented tree calls; a template cannot define names starting with "__tracksum"
// by accident.
const (
	budgetVar = "__tracksum_budget"
	guardFunc = "__tracksum_guard"
	countFunc = "__tracksum_count"
)

// budget is the state of one rendering; its first error is the one Render reports.
type budget struct {
	l        Limits
	ctx      context.Context
	deadline time.Time
	steps    int
	// checkpoints counts deeper's calls.
	checkpoints int
	alloc       int
	pcs         []uintptr
	err         error
}

func newBudget(ctx context.Context, l Limits) *budget {
	if ctx == nil {
		ctx = context.Background()
	}
	l = l.withDefaults()
	return &budget{l: l, ctx: ctx, deadline: time.Now().Add(l.Timeout), pcs: make([]uintptr, l.MaxDepth+1)}
}

func (b *budget) fail(format string, args ...any) error {
	if b.err == nil {
		b.err = fmt.Errorf(format, args...)
	}
	return b.err
}

// step counts one unit of work and checks every bound but the output's.
func (b *budget) step() error {
	if b.err != nil {
		return b.err
	}
	b.steps++
	if b.steps > b.l.MaxSteps {
		return b.fail("more than %d steps (loop iterations, macro calls, filters, operations)", b.l.MaxSteps)
	}
	if err := b.ctx.Err(); err != nil {
		return b.fail("cancelled: %v", err)
	}
	if time.Now().After(b.deadline) {
		return b.fail("rendering took more than %v", b.l.Timeout)
	}
	return nil
}

// deeper is step at a checkpoint (loop, macro and call bodies, where recursion passes): every
// 8th also measures the Go stack, whose cost grows with its depth. Recursion overshoots the
// bound by at most 8 levels, far from the 1 GB at which Go's stack overflow is fatal.
func (b *budget) deeper() error {
	if err := b.step(); err != nil {
		return err
	}
	b.checkpoints++
	if b.checkpoints%8 == 0 && runtime.Callers(0, b.pcs) > b.l.MaxDepth {
		return b.fail("nesting deeper than %d stack frames (recursive macros or loops)", b.l.MaxDepth)
	}
	return nil
}

// grow counts n bytes built.
func (b *budget) grow(n int) error {
	if b.err != nil {
		return b.err
	}
	if n < 0 || n > b.l.MaxAlloc-b.alloc {
		return b.fail("more than %d bytes of strings built", b.l.MaxAlloc)
	}
	b.alloc += n
	return nil
}

func budgetOf(ctx *exec.Context) *budget {
	v, _ := ctx.Get(budgetVar)
	b, _ := v.(*budget)
	return b
}

// size is the byte size of v when it is a string, or its length when a list: what an operator
// on it builds.
func size(v *exec.Value) int {
	switch {
	case v.IsString():
		return len(v.String())
	case v.IsList():
		return v.Len()
	}
	return 0
}

// guard checks, before gonja computes left OP right, that the result stays within the budget
// (and that a remainder is not by zero);
// it returns right unchanged (the instrumented tree evaluates left OP guard(left, right, OP)).
func (b *budget) guard(args *exec.VarArgs) (*exec.Value, error) {
	if err := b.step(); err != nil {
		return nil, err
	}
	if len(args.Args) != 3 {
		return nil, fmt.Errorf("%s: want 3 arguments", guardFunc)
	}
	left, right, op := args.Args[0], args.Args[1], args.Args[2].String()
	if left.IsFloat() || right.IsFloat() {
		return right, nil
	}
	n := 0
	switch op {
	case "*":
		if left.IsString() && right.IsInteger() {
			k := right.Integer()
			if k > 0 && len(left.String()) > (b.l.MaxAlloc-b.alloc)/k {
				return nil, b.fail("a repetition of %d x %d bytes exceeds %d bytes of strings built", k, len(left.String()), b.l.MaxAlloc)
			}
			n = max(k, 0) * len(left.String())
		}
	case "+":
		if left.IsList() || left.IsString() || right.IsString() {
			n = size(left) + size(right)
			if left.IsString() != right.IsString() {
				n = len(left.String()) + len(right.String())
			}
		}
	case "~":
		n = len(left.String()) + len(right.String())
	case "%":
		// gonja computes an integer remainder with Go's %, which panics on 0.
		if right.IsInteger() && right.Integer() == 0 {
			return nil, errors.New("integer modulo by zero")
		}
	}
	if err := b.grow(n); err != nil {
		return nil, err
	}
	return right, nil
}

// count passes an output expression's value through, counting its text.
func (b *budget) count(args *exec.VarArgs) (*exec.Value, error) {
	if len(args.Args) != 1 {
		return nil, fmt.Errorf("%s: want 1 argument", countFunc)
	}
	v := args.Args[0]
	if v.IsString() {
		if err := b.grow(len(v.String())); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// rangeFunc is range() materialized as a list after a size check: gonja's range feeds a channel
// from a goroutine, which a loop aborted by a limit would leave blocked forever.
func (b *budget) rangeFunc(args *exec.VarArgs) ([]int, error) {
	start, stop, step := 0, 0, 1
	ints := make([]int, len(args.Args))
	for i, a := range args.Args {
		if !a.IsInteger() {
			return nil, errors.New("range: want integers")
		}
		ints[i] = a.Integer()
	}
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return nil, errors.New("range: want [start, ]stop[, step]")
	}
	if step == 0 {
		return nil, errors.New("range: step cannot be 0")
	}
	n := 0
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		n = (start - stop - step - 1) / -step
	}
	if n < 0 || n > b.l.MaxSteps-b.steps {
		return nil, b.fail("range of %d numbers exceeds %d steps", n, b.l.MaxSteps)
	}
	b.steps += n
	if err := b.grow(8 * n); err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// limitedWriter fails the rendering once more than max bytes are written.
type limitedWriter struct {
	strings.Builder
	b   *budget
	max int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.Len()+len(p) > w.max {
		return 0, w.b.fail("more than %d bytes of output", w.max)
	}
	return w.Builder.Write(p)
}

func (w *limitedWriter) WriteString(s string) (int, error) {
	if w.Len()+len(s) > w.max {
		return 0, w.b.fail("more than %d bytes of output", w.max)
	}
	return w.Builder.WriteString(s)
}

// checkpoint is the control structure the instrumentation puts at the start of loop and macro
// bodies: one step, and the literal text the body writes counted as built.
type checkpoint struct {
	at    *tokens.Token
	bytes int
}

func (c *checkpoint) Position() *tokens.Token { return c.at }
func (c *checkpoint) String() string          { return "checkpoint" }

// Execute implements exec.ControlStructure.
func (c *checkpoint) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	b := budgetOf(r.Environment.Context)
	if b == nil {
		return nil
	}
	if err := b.deeper(); err != nil {
		return err
	}
	return b.grow(c.bytes)
}

// limitFilter wraps a filter: one step, integer arguments (widths, counts) no larger than the
// output bound, and its string or list result counted as built.
func limitFilter(f exec.FilterFunction) exec.FilterFunction {
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		b := budgetOf(e.Environment.Context)
		if b == nil {
			return f(e, in, params)
		}
		if err := b.step(); err != nil {
			return exec.AsValue(err)
		}
		if err := checkIntArgs(params, b.l.MaxOutput); err != nil {
			return exec.AsValue(b.fail("%v", err))
		}
		out := f(e, in, params)
		if err := b.grow(size(out)); err != nil {
			return exec.AsValue(err)
		}
		return out
	}
}

// limitMethod wraps a str method the same way for the render of b (methods get no evaluator:
// Render builds its methods around its budget): str.ljust(2000000000) fails instead of
// allocating.
func limitMethod(m exec.Method[string], b *budget) exec.Method[string] {
	return func(self string, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
		if err := b.step(); err != nil {
			return nil, err
		}
		if err := checkIntArgs(args, b.l.MaxOutput); err != nil {
			return nil, b.fail("%v", err)
		}
		out, err := m(self, selfValue, args)
		if s, ok := out.(string); ok {
			if err := b.grow(len(s)); err != nil {
				return nil, err
			}
		}
		return out, err
	}
}

func checkIntArgs(params *exec.VarArgs, maxInt int) error {
	if params == nil {
		return nil
	}
	check := func(v *exec.Value) error {
		if v != nil && v.IsInteger() && v.Integer() > maxInt {
			return fmt.Errorf("argument %d exceeds %d", v.Integer(), maxInt)
		}
		return nil
	}
	for _, a := range params.Args {
		if err := check(a); err != nil {
			return err
		}
	}
	for _, a := range params.KwArgs {
		if err := check(a); err != nil {
			return err
		}
	}
	return nil
}

var (
	binaryType = reflect.TypeFor[*nodes.BinaryExpression]()
	outputType = reflect.TypeFor[*nodes.Output]()
	forType    = reflect.TypeFor[*controlStructures.ForControlStructure]()
	macroType  = reflect.TypeFor[*nodes.Macro]()
	callType   = reflect.TypeFor[*controlStructures.CallControlStructure]()
	tokenType  = reflect.TypeFor[*tokens.Token]()
)

// instrument rewrites a parsed template in place for the budget (see the top of this file). It
// walks every node by reflection, since gonja's control structures keep their sub-trees in
// fields of their own types (some unexported, read through their pointers).
func instrument(root *nodes.Template) {
	seen := map[unsafe.Pointer]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || v.Type() == tokenType {
				return
			}
			p := v.UnsafePointer()
			if seen[p] {
				return
			}
			seen[p] = true
			walk(v.Elem())
			// Children first: the nodes inserted below are never walked.
			switch v.Type() {
			case binaryType:
				guardBinary((*nodes.BinaryExpression)(p))
			case outputType:
				o := (*nodes.Output)(p)
				o.Expression = callNode(countFunc, o.Start, o.Expression)
				if o.Alternative != nil {
					o.Alternative = callNode(countFunc, o.Start, o.Alternative)
				}
			case forType:
				checkpointAt((*controlStructures.ForControlStructure)(p).BodyWrapper)
			case macroType:
				checkpointAt((*nodes.Macro)(p).Wrapper)
			case callType:
				checkpointAt((*controlStructures.CallControlStructure)(p).Body)
			}
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Value())
			}
		}
	}
	walk(reflect.ValueOf(root))
}

func guardBinary(e *nodes.BinaryExpression) {
	if e.Operator == nil || e.Operator.Token == nil {
		return
	}
	switch e.Operator.Token.Type {
	case tokens.Multiply, tokens.Addition, tokens.Tilde, tokens.Modulo:
	default:
		return
	}
	at := e.Operator.Token
	e.Right = callNode(guardFunc, at, e.Left, e.Right, &nodes.String{Location: at, Val: at.Val})
}

func callNode(name string, at *tokens.Token, args ...nodes.Expression) *nodes.Call {
	tok := &tokens.Token{Type: tokens.Name, Val: name, Pos: at.Pos, Line: at.Line, Col: at.Col}
	return &nodes.Call{Location: tok, Func: &nodes.Name{Name: tok}, Args: args, Kwargs: map[string]nodes.Expression{}}
}

// checkpointAt puts a checkpoint first in w, counting the literal text w holds (in every branch:
// an upper bound of what one pass writes).
func checkpointAt(w *nodes.Wrapper) {
	if w == nil {
		return
	}
	at := w.Location
	if at == nil {
		at = &tokens.Token{}
	}
	c := &checkpoint{at: at, bytes: literalBytes(reflect.ValueOf(w), map[unsafe.Pointer]bool{})}
	block := &nodes.ControlStructureBlock{Location: at, Name: "checkpoint", ControlStructure: c}
	w.Nodes = append([]nodes.Node{block}, w.Nodes...)
}

var dataType = reflect.TypeFor[*nodes.Data]()

func literalBytes(v reflect.Value, seen map[unsafe.Pointer]bool) int {
	n := 0
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || v.Type() == tokenType || seen[v.UnsafePointer()] {
			return 0
		}
		seen[v.UnsafePointer()] = true
		if v.Type() == dataType {
			if d := (*nodes.Data)(v.UnsafePointer()); d.Data != nil {
				return len(d.Data.Val)
			}
			return 0
		}
		return literalBytes(v.Elem(), seen)
	case reflect.Interface:
		if !v.IsNil() {
			n += literalBytes(v.Elem(), seen)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			n += literalBytes(v.Field(i), seen)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			n += literalBytes(v.Index(i), seen)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			n += literalBytes(it.Value(), seen)
		}
	}
	return n
}

// lexBounded lexes source in gonja's channel mode and reports whether the lexer ends within
// a token count no real lexing needs (a token per byte, and some): on some malformed tags
// gonja's lexer never ends, emitting tokens until memory runs out, and its synchronous mode,
// which exec.NewTemplate uses, cannot be stopped. A lexer stopped here stays blocked on its
// channel (one idle goroutine per such template) instead of growing.
func lexBounded(source string, cfg *config.Config) error {
	l := tokens.NewLexer(source, cfg)
	crashed := make(chan any, 1)
	go func() {
		// The lexer also panics on some inputs (a slice out of range in lexNumber).
		defer func() {
			if r := recover(); r != nil {
				crashed <- r
			}
		}()
		l.Run()
	}()
	limit := len(source) + 64
	for n := 0; ; n++ {
		select {
		case r := <-crashed:
			return fmt.Errorf("the lexer failed: %v", r)
		case tok, ok := <-l.Tokens:
			if !ok || tok == nil || tok.Type == tokens.EOF {
				return nil
			}
			if tok.Type == tokens.Error {
				// Reported here: on some such sources the synchronous lexer of exec.NewTemplate
				// goes on forever instead of stopping at the error.
				return fmt.Errorf("line %d col %d: %s", tok.Line, tok.Col, tok.Val)
			}
			if n > limit {
				return fmt.Errorf("the lexer does not end (more than %d tokens for %d bytes)", limit, len(source))
			}
		}
	}
}
