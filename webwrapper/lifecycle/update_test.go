package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/engine/enginetest"
)

// The update notice is in the window's language: the start's culture or the Culture
// setting, in the five languages of the service; its link is the newer build's MSI.
func TestUpdateNoticeLanguage(t *testing.T) {
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"version": "2.1.6.1", "url": "https://downloads.example/SvcWebwrapper-2.1.6.1.msi"}`)
	}))
	defer feed.Close()
	for _, tt := range []struct{ culture, lang string }{{"nb-NO", "nb"}, {"sv-SE", "sv"}, {"da-DK", "da"}, {"de-AT", "de"}, {"en-GB", "en"}} {
		dir := wintest.TempDir(t)
		w := &wrapper{cfg: testConfig(t, dir, `<add key="UpdateSite" value="`+feed.URL+`/"/>`), dir: dir,
			o: Options{Version: "2.1.5.0"}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		eng := enginetest.New()
		if err := eng.Start(context.Background(), engine.Options{URL: "http://app/"}); err != nil {
			t.Fatal(err)
		}
		shown := make(chan []any, 1)
		eng.Handle("showNotice", func(args []any) (any, error) { shown <- args; return nil, nil })
		a := app.New(eng, app.Options{Version: "2.1.5.0"})
		ctx, cancel := context.WithCancel(context.Background())
		go a.Run(ctx)
		eng.Emit("signedIn", map[string]any{"account": map[string]any{"id": 7, "username": "inst"}, "organization": map[string]any{"id": 1}})
		w.checkUpdate(ctx, a, tt.culture)
		select {
		case got := <-shown:
			want := []any{i18n.T(tt.lang, "webwrapper.update_notice", "version", "2.1.6.1"), "https://downloads.example/SvcWebwrapper-2.1.6.1.msi"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("culture %s: showNotice%q, want %q", tt.culture, got, want)
			}
		default:
			t.Errorf("culture %s: no notice shown", tt.culture)
		}
		cancel()
		<-a.Done()
	}
}
