// Package reportcheck checks eval's report.html in a real browser: its test builds a report from
// the fixtures in testdata/ (through eval.Evaluation and eval.WriteOutputs, as tracksum-eval
// does), renders it in headless Chromium at a 1,400 x 900 window (and a narrower one), and checks
// the rendered DOM (every metric column, the interval under each value, the SVG charts, the
// tracker probabilities, the filters' script having run, nothing wider than the window) and that
// the screenshot is not blank. Unit tests cannot see layout: a table cut off at the window's edge
// (issue 23) is only visible to a browser.
//
// The test skips, saying how to install it, when no Chromium is found (chromium, chromium-browser,
// google-chrome or google-chrome-stable on PATH, or the binary named by $REPORTCHECK_CHROME). On
// Debian: apt-get install chromium. REPORTCHECK_OUT=dir keeps the pages, DOM dumps and screenshots.
//
// # Example
//
//	go test ./tools/reportcheck -v
package reportcheck
