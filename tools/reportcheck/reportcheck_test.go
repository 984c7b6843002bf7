package reportcheck

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/eval"
)

// chromeNames are the binaries tried in order; $REPORTCHECK_CHROME names another.
var chromeNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

func findChrome(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("REPORTCHECK_CHROME"); p != "" {
		return p
	}
	for _, n := range chromeNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skipf("no headless browser for the report.html check: none of %v is on PATH (Debian/Ubuntu: apt-get install chromium; or set REPORTCHECK_CHROME=/path/to/chrome)", chromeNames)
	return ""
}

// measure is added before </body> of a copy of the page: it runs after the page's own script and
// writes the layout into the DOM that --dump-dom prints. An element counts as too wide when its
// box ends right of the viewport (hidden elements have empty boxes).
const measure = `<script>
(function () {
  var vw = document.documentElement.clientWidth, wide = [];
  document.querySelectorAll("body *").forEach(function (el) {
    var r = el.getBoundingClientRect(), c = typeof el.className === "string" ? el.className.trim() : "";
    if (r.width > 0 && r.right > vw + 0.5) {
      wide.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (c ? "." + c.split(/\s+/).join(".") : "") + "@" + Math.round(r.right));
    }
  });
  var d = document.createElement("div");
  d.id = "reportcheck";
  d.setAttribute("data-scroll-width", String(document.documentElement.scrollWidth));
  d.setAttribute("data-client-width", String(vw));
  d.setAttribute("data-wide-count", String(wide.length));
  d.setAttribute("data-wide", wide.slice(0, 12).join(" "));
  document.body.appendChild(d);
})();
</script>
`

// writeReport evaluates the fixtures as tracksum-eval does and returns report.html.
func writeReport(t *testing.T, dir string) string {
	t.Helper()
	cfg := config.Default()
	cfg.Eval.Bootstrap.Resamples = 200
	out, err := eval.Evaluation(context.Background(), "testdata/pred.jsonl", "testdata/ref.jsonl", cfg.Eval, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := eval.WriteOutputs(dir, out, &cfg); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "report.html")
}

// runChrome runs one headless Chromium command and returns its standard output.
func runChrome(t *testing.T, chrome, profile string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// --no-sandbox: CI and containers run as root, where Chromium's sandbox refuses to start; the
	// page is our own file.
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--hide-scrollbars", "--force-device-scale-factor=1", "--user-data-dir=" + profile}
	cmd := exec.CommandContext(ctx, chrome, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", chrome, args, err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func attr(t *testing.T, dom, id, name string) string {
	t.Helper()
	tag := regexp.MustCompile(`<div id="` + id + `"[^>]*>`).FindString(dom)
	if tag == "" {
		t.Fatalf("the rendered DOM has no #%s (did the page's scripts run?)", id)
	}
	m := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		t.Fatalf("#%s has no %s: %s", id, name, tag)
	}
	return m[1]
}

func TestReportInHeadlessChromium(t *testing.T) {
	chrome := findChrome(t)
	if testing.Short() {
		t.Skip("starts a browser: not under -short")
	}
	dir := t.TempDir()
	if keep := os.Getenv("REPORTCHECK_OUT"); keep != "" {
		dir = keep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	page := writeReport(t, filepath.Join(dir, "eval"))
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(html, []byte("</body>"))
	if i < 0 {
		t.Fatal("report.html has no </body>")
	}
	measured := filepath.Join(dir, "measured.html")
	if err := os.WriteFile(measured, append(append(append([]byte{}, html[:i]...), measure...), html[i:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + measured
	// The check itself must be able to fail: the old page's one wide table (issue 23: 1,699 px in a
	// 1,400 px window) is imitated by a wide element added to a copy.
	t.Run("a page wider than the window is caught", func(t *testing.T) {
		wide := filepath.Join(dir, "wide.html")
		extra := `<table class="summary"><tr><td style="min-width: 1700px">too wide</td></tr></table>` + measure
		if err := os.WriteFile(wide, append(append(append([]byte{}, html[:i]...), extra...), html[i:]...), 0o644); err != nil {
			t.Fatal(err)
		}
		dom := string(runChrome(t, chrome, filepath.Join(t.TempDir(), "profile"), "--window-size=1400,900", "--virtual-time-budget=5000", "--dump-dom", "file://"+wide))
		sw, _ := strconv.Atoi(attr(t, dom, "reportcheck", "data-scroll-width"))
		if n := attr(t, dom, "reportcheck", "data-wide-count"); sw <= 1400 || n == "0" {
			t.Errorf("a 1,700 px table in a 1,400 px window: scroll width %d, %s wide elements; the width check cannot fail", sw, n)
		}
	})
	for _, w := range []struct{ width, height int }{{1400, 900}, {900, 900}} {
		t.Run(fmt.Sprintf("%dx%d", w.width, w.height), func(t *testing.T) {
			size := fmt.Sprintf("--window-size=%d,%d", w.width, w.height)
			profile := filepath.Join(t.TempDir(), "profile")
			dom := string(runChrome(t, chrome, profile, size, "--virtual-time-budget=5000", "--dump-dom", url))
			if keep := os.Getenv("REPORTCHECK_OUT"); keep != "" {
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("dom-%d.html", w.width)), []byte(dom), 0o644)
			}
			checkDOM(t, dom, w.width)
			shot := filepath.Join(dir, fmt.Sprintf("report-%d.png", w.width))
			runChrome(t, chrome, profile, size, "--virtual-time-budget=5000", "--screenshot="+shot, url)
			checkScreenshot(t, shot, w.width)
		})
	}
}

// checkDOM checks the page as the browser built it: every metric column, an interval under each
// value, the charts, the tracker probabilities, the filter script's count, and nothing right of
// the window.
func checkDOM(t *testing.T, dom string, width int) {
	t.Helper()
	for _, m := range []string{"claim_precision", "claim_recall", "claim_f1", "citation_precision", "citation_recall",
		"citation_f1", "citation_exact_precision", "citation_exact_recall", "citation_exact_f1",
		"rouge1_f", "rouge2_f", "rougeL_f", "rougeLsum_f"} {
		if !strings.Contains(dom, `data-metric="`+m+`"`) {
			t.Errorf("no column for %s in the metric tables", m)
		}
	}
	if n := strings.Count(dom, `<span class="ci">[`); n < 13*4 {
		t.Errorf("%d intervals in the tables, want one per value (at least %d)", n, 13*4)
	}
	for _, id := range []string{"fig-claims", "fig-citations", "fig-histogram", "fig-sweep"} {
		if !regexp.MustCompile(`<figure id="` + id + `"><svg class="chart `).MatchString(dom) {
			t.Errorf("no SVG chart %s", id)
		}
	}
	if !strings.Contains(dom, "0.5 (default") {
		t.Error("the threshold sweep does not mark 0.5")
	}
	if n := strings.Count(dom, `class="tp tp`); n == 0 {
		t.Error("no tracker probability beside the sentences")
	}
	if !regexp.MustCompile(`<span id="f-count">\d+ instance\(s\) shown</span>`).MatchString(dom) {
		t.Error("the filter script did not run (no instance count)")
	}
	sw, _ := strconv.Atoi(attr(t, dom, "reportcheck", "data-scroll-width"))
	cw, _ := strconv.Atoi(attr(t, dom, "reportcheck", "data-client-width"))
	t.Logf("window %d px: viewport %d px, page scroll width %d px", width, cw, sw)
	if cw <= 0 || cw > width {
		t.Errorf("viewport %d px for a %d px window", cw, width)
	}
	if sw > cw {
		t.Errorf("the page is %d px wide in a %d px viewport: it scrolls sideways", sw, cw)
	}
	if n := attr(t, dom, "reportcheck", "data-wide-count"); n != "0" {
		t.Errorf("%s element(s) end right of the %d px viewport: %s", n, cw, attr(t, dom, "reportcheck", "data-wide"))
	}
}

// checkScreenshot checks that the screenshot is a PNG of the window's width with something drawn:
// a blank (all white) or single-colour image means the page did not render.
func checkScreenshot(t *testing.T, path string, width int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() != width {
		t.Errorf("screenshot %d px wide, want %d", b.Dx(), width)
	}
	colours := map[[3]uint32]bool{}
	ink := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if r>>8 < 240 || g>>8 < 240 || bl>>8 < 240 {
				ink++
			}
		}
	}
	share := float64(ink) / float64(b.Dx()*b.Dy())
	t.Logf("screenshot %s: %dx%d, %d colours, %.1f%% non-white pixels", filepath.Base(path), b.Dx(), b.Dy(), len(colours), 100*share)
	if len(colours) < 16 || share < 0.02 {
		t.Errorf("screenshot looks blank: %d colours, %.2f%% non-white pixels", len(colours), 100*share)
	}
}
