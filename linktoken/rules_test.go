package linktoken

import (
	"testing"

	"github.com/partnergate/partnergate/problem"
)

// TestRulesComplete: every rule of the list can run and be shown; a gap in the indexed
// list would leave a zero rule.
func TestRulesComplete(t *testing.T) {
	r := &Rules{}
	for i, ru := range rules {
		if ru.check == nil || ru.text == nil || ru.text(r) == "" {
			t.Errorf("rules[%d] = %+v, want a check and a text", i, ru)
		}
	}
	if rules[ruleDropped].code != "" || rules[ruleAlgorithm].code != problem.CodeAlgorithmNotAllowed || rules[ruleKeyAlgorithm].code != problem.CodeAlgorithmNotAllowed || rules[ruleNoncePresent].code != problem.CodeNonceMissing {
		t.Error("the indexes of rule constants do not point at their rules")
	}
}

// NumRules is the length of the rule list, for the external tests' traces.
var NumRules = len(rules)
