package linktoken_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/linktoken/linktokentest"
)

// TestVerifyRejects runs the gateway's rejection table through Verify. The table lives in
// linktokentest so that the partner kit's check runs the very same cases.
func TestVerifyRejects(t *testing.T) {
	set := linktokentest.KeySet(t)
	for _, tc := range linktokentest.Rejections() {
		t.Run(tc.Name, func(t *testing.T) {
			token := tc.Token(t)
			v, err := linktoken.NewVerifier(tc.Rules, linktoken.WithClock(func() time.Time { return tc.Now }))
			if err != nil {
				t.Fatalf("NewVerifier: %v", err)
			}
			got, err := v.Verify(context.Background(), []byte(token), set)
			if err == nil {
				t.Fatalf("Verify(%s) = token of kind %q, want error %q", tc.Name, got.Kind, tc.Want)
			}
			var e *linktoken.Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify(%s) error %v is not an *Error", tc.Name, err)
			}
			if e.Code != tc.Want {
				t.Errorf("Verify(%s) = %q (%s), want %q", tc.Name, e.Code, e.Detail, tc.Want)
			}
			if tc.Field != "" && (len(e.Fields) == 0 || e.Fields[0].Field != tc.Field) {
				t.Errorf("Verify(%s).Fields = %v, want first field %q", tc.Name, e.Fields, tc.Field)
			}
			if e.Detail == "" {
				t.Errorf("Verify(%s).Detail is empty", tc.Name)
			}
			// Details are fixed sentences: no token text, no claim value, no kid.
			for _, s := range append(tc.Secrets, jwttest.Nonce, "emp-1001", "Þórsdóttir", "20400229-1237", "rsa-1", "ec-1") {
				if strings.Contains(e.Error(), s) {
					t.Errorf("Verify(%s) error %q contains %q", tc.Name, e.Error(), s)
				}
			}
		})
	}
}
