package llmmethods

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/tracksum/tracksum/dataset"
)

// The prompts follow the structure of TracSum's Table 15-17 and PCoA's Tables 6 and 8-11 in our
// own words: instructions naming the aspect, the abstract as a list of numbered sentences, and a
// fixed answer format that the parsers of parse.go read. Each prompt is one user message; the
// endpoint applies the model's own chat format.

// numbered renders sentences as a JSON list of "i: sentence" strings, the layout of the papers'
// prompts, so that the model can cite sentences by index.
func numbered(doc []string) string {
	items := make([]string, len(doc))
	for i, s := range doc {
		items[i] = fmt.Sprintf("%d: %s", i, s)
	}
	return jsonList(items)
}

// jsonList renders strings as a one-line JSON list, without HTML escaping.
func jsonList(items []string) string {
	if items == nil {
		items = []string{}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(items)
	return strings.TrimSpace(b.String())
}

// citationList renders indices as the prompt's citation list, "[2, 3]".
func citationList(idx []int) string {
	parts := make([]string, len(idx))
	for i, k := range idx {
		parts[i] = fmt.Sprint(k)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

var funcs = template.FuncMap{"numbered": numbered, "list": jsonList, "citations": citationList,
	"paperNumbered": paperNumbered, "paperTopic": paperTopic}

// paperNumbered renders numbered sentences as Table 15 prints them: '["0: ...", "1: ..."]'.
func paperNumbered(doc []string) string {
	items := make([]string, len(doc))
	for i, s := range doc {
		q := jsonList([]string{fmt.Sprintf("%d: %s", i, s)})
		items[i] = q[1 : len(q)-1]
	}
	return "'[" + strings.Join(items, ", ") + "]'"
}

// paperTopic is what Table 15 asks to summarize: aims' text as printed ("the research questions
// or aims of this study") and, for the other aspects, their description in its place.
func paperTopic(a dataset.Aspect) string {
	if a.Code == "a" && a.Name == "Aims" {
		return "the research questions or aims of this study"
	}
	return "the " + a.Description
}

// aspectPhrase is how every prompt names the aspect: "the Aims of the study (objective of the
// study)".
const aspectPhrase = `the {{.Aspect.Name}} of the study ({{.Aspect.Description}})`

var (
	// promptTmpl is TracSum's two-shot prompt (Table 15): one positive and one negative
	// demonstration, then the abstract; the answer is "Summary: ..." and "Citations: [...]".
	promptTmpl = template.Must(template.New("prompt").Funcs(funcs).Parse(`Instructions:
Below is a medical abstract given as a list of sentences, each starting with its index. Following the demonstrations, summarize ` + aspectPhrase + ` in one sentence and give the indices of the sentences the summary is based on. If the abstract has no information about it, write "Unknown." as the summary and "Null." as the citations, and nothing else.
Reply in exactly this form:
Summary: <one sentence>
Citations: [<indices>]

Demonstrations:
{{range .Demos}}
Document:
{{numbered .Document}}
Summary: {{if .Indexes}}{{.Summary}}{{else}}Unknown.{{end}}
Citations: {{if .Indexes}}{{citations .Indexes}}{{else}}Null.{{end}}
{{end}}
Your task:
Document:
{{numbered .Document}}
`))

	// paperPromptTmpl is Table 15 as printed: the instruction (aims' highlighted text replaced by
	// the aspect's topic), the target document with empty answer fields, then the demonstrations
	// (a negative one answers "Unknown." and "Null."); headings alone on their line, the lists
	// quoted '[...]'.
	paperPromptTmpl = template.Must(template.New("paper-prompt").Funcs(funcs).Parse(`Instructions

Given a document consisting of a set of sentences with a marker attached to the head of each sentence. Based on the demonstrations, please summarize {{paperTopic .Aspect}} in one sentence and output the sentence markers involved. If there is no relevant information in the document, answer "Unknown".

Document

{{paperNumbered .Document}}

Summary: .

Citations: .

Demonstrations
{{range .Demos}}
Document

{{paperNumbered .Document}}

Summary: {{if .Indexes}}{{.Summary}}{{else}}Unknown.{{end}}

Citations: {{if .Indexes}}{{citations .Indexes}}{{else}}Null.{{end}}
{{end}}`))

	// intrinsicTmpl is PCoA's intrinsic attribution (Table 6): sentences, phrases and summary in
	// one answer.
	intrinsicTmpl = template.Must(template.New("intrinsic").Funcs(funcs).Parse(`Instructions:
Below is a medical abstract given as a list of sentences, each starting with its index. Do three things:
1. List the indices of the sentences that contain information about ` + aspectPhrase + `.
2. From those sentences, extract the key phrases (copied word for word) that carry this information.
3. Based on those sentences and key phrases, summarize the {{.Aspect.Name}} of the study in one concise sentence.
If the abstract has no information about it, answer with empty lists and the summary "Unknown.".
Reply in exactly this form:
Indices: [<indices>]
Key phrases: ["<phrase>", ...]
Summary: <one sentence>

Abstract:
{{numbered .Document}}
`))

	// retrieveTmpl is PCoA's prior attribution, first step (Table 8): sentences and phrases
	// about the aspect, before any summary.
	retrieveTmpl = template.Must(template.New("retrieve").Funcs(funcs).Parse(`Instructions:
Below is a medical abstract given as a list of sentences, each starting with its index. Do two things:
1. List the indices of the sentences that contain or contribute to information about ` + aspectPhrase + `.
2. From those sentences, extract the key phrases (copied word for word) that carry this information.
If the abstract has no information about it, answer with empty lists.
Reply in exactly this form:
Indices: [<indices>]
Key phrases: ["<phrase>", ...]

Abstract:
{{numbered .Document}}
`))

	// fromEvidenceTmpl is PCoA's prior attribution, second step (Table 9): the summary written
	// from the retrieved sentences and phrases only.
	fromEvidenceTmpl = template.Must(template.New("from_evidence").Funcs(funcs).Parse(`Instructions:
Below are sentences about ` + aspectPhrase + ` and key phrases taken from them. Summarize the {{.Aspect.Name}} of the study in one concise and coherent sentence that keeps as much of the key phrases' information as possible. Use only these sentences.
Reply in exactly this form:
Summary: <one sentence>

Sentences:
{{list .Sentences}}

Key phrases:
{{list .Phrases}}
`))

	// summarizeTmpl is PCoA's post-hoc attribution, first step (Table 10): the summary from the
	// whole abstract, with no citation.
	summarizeTmpl = template.Must(template.New("summarize").Funcs(funcs).Parse(`Instructions:
Below is a medical abstract given as a list of sentences. Summarize ` + aspectPhrase + ` in one concise sentence. If the abstract has no information about it, write "Unknown." as the summary.
Reply in exactly this form:
Summary: <one sentence>

Abstract:
{{numbered .Document}}
`))

	// attributeTmpl is PCoA's post-hoc attribution, second step (Table 11): the sentences and
	// phrases a given summary rests on.
	attributeTmpl = template.Must(template.New("attribute").Funcs(funcs).Parse(`Instructions:
Below is a medical abstract given as a list of sentences, each starting with its index, and a summary of ` + aspectPhrase + `. Do two things:
1. List the indices of the sentences of the abstract that the summary is based on.
2. From those sentences, extract the key phrases (copied word for word) that are relevant to the summary.
Reply in exactly this form:
Indices: [<indices>]
Key phrases: ["<phrase>", ...]

Abstract:
{{numbered .Document}}

Summary:
{{.Summary}}
`))

	// trackTmpl is the prompted tracker of Track-then-Sum: the indices of the sentences about the
	// aspect.
	trackTmpl = template.Must(template.New("track").Funcs(funcs).Parse(`Instructions:
Below is a medical abstract given as a list of sentences, each starting with its index. List the indices of the sentences that contain information about ` + aspectPhrase + `. If no sentence does, answer with an empty list.
Reply in exactly this form:
Indices: [<indices>]

Abstract:
{{numbered .Document}}
`))

	// tracsumSummarizerTmpl is the prompted summarizer of Track-then-Sum (TracSum Tables 16 and 17):
	// the summary of the tracked sentences, optionally with the whole abstract as context only.
	tracsumSummarizerTmpl = template.Must(template.New("summarizer").Funcs(funcs).Parse(`Instructions:
Summarize ` + aspectPhrase + ` in one clear sentence that keeps every key detail of the sentences below without leaving out important information.{{if .Document}} Base the summary only on these sentences: the full abstract after them is context and must not bring in any information the sentences do not give.{{end}}
Reply in exactly this form:
Summary: <one sentence>

Sentences:
{{list .Sentences}}
{{if .Document}}
Full abstract:
{{list .Document}}
{{end}}`))
)

// promptData is what the templates read.
type promptData struct {
	Aspect    dataset.Aspect
	Document  []string
	Demos     []dataset.Instance
	Sentences []string
	Phrases   []string
	Summary   string
}

func render(t *template.Template, d promptData) string {
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		// The templates are fixed and their data are plain values: a failure is a bug here.
		panic(fmt.Sprintf("llmmethods: template %s: %v", t.Name(), err))
	}
	return b.String()
}
