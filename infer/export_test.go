package infer

// Helpers of the external tests (serve_test.go), which import serve and so cannot be in package
// infer.
var (
	RefineConfig = refineConfig
	ReadRefined  = readPredictions
)

// Discard and RefinedPrediction are discard and refinedPrediction for the external tests.
type (
	Discard           = discard
	RefinedPrediction = refinedPrediction
)
