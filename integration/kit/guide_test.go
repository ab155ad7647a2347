package kit

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/problem"
)

// tableRow is a row of the guide's error table: "| `code`, `code2` | 400 | …".
var tableRow = regexp.MustCompile("^\\| (`[a-z_]+`(?:, `[a-z_]+`)*) \\| (\\d{3}) \\|")

// guideLines returns the lines of the partner guide, docs/partners.md.
func guideLines(t *testing.T) []string {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/partners.md"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(doc), "\n")
}

// guideStatuses reads the guide's error table: code to HTTP status.
func guideStatuses(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, line := range guideLines(t) {
		m := tableRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		status, _ := strconv.Atoi(m[2])
		for _, c := range strings.Split(m[1], ", ") {
			out[strings.Trim(c, "`")] = status
		}
	}
	return out
}

// TestGuideListsEveryCode keeps docs/partners.md in step with the gateway: every code of
// linktoken and of the gateway in problem/ has a row.
func TestGuideListsEveryCode(t *testing.T) {
	statuses := guideStatuses(t)
	codes := []problem.Code{
		problem.CodeNotFound, problem.CodePartnerUnknown, problem.CodeMethodNotAllowed,
		problem.CodeUnsupportedMediaType, problem.CodeBodyTooLarge, problem.CodeBodyUnreadable,
		problem.CodeTokenMissing, problem.CodeTokenDuplicated, problem.CodeTokenInQuery,
		problem.CodeTokenReplayed, problem.CodeTokenBeforeStoreStart,
		problem.CodeNonceStoreUnavailable, problem.CodeNonceStoreFull,
		problem.CodeInternal,
	}
	for _, c := range []problem.Code{
		problem.CodeTokenMalformed, problem.CodeHeaderInvalid, problem.CodeAlgorithmNotAllowed,
		problem.CodeKeyIDMissing, problem.CodeKeyUnknown, problem.CodeKeysUnavailable,
		problem.CodeSignatureInvalid, problem.CodeClaimsInvalid, problem.CodeTimeInMilliseconds, problem.CodeIssuerInvalid,
		problem.CodeAudienceInvalid, problem.CodeLifetimeTooLong, problem.CodeTokenNotYetValid,
		problem.CodeTokenExpired, problem.CodeNonceMissing, problem.CodeNonceInvalid,
		problem.CodePayloadInvalid, problem.CodeKindNotAllowed,
	} {
		codes = append(codes, problem.Code(c))
	}
	for _, c := range codes {
		if _, ok := statuses[string(c)]; !ok {
			t.Errorf("docs/partners.md's error table has no row for %s", c)
		}
	}
}
