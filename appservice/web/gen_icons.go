//go:build ignore

// gen_icons writes Go's home screen icons, static/go/icon-<size>.png, from package goicon:
// go generate in appservice/web.
package main

import (
	"fmt"
	"os"

	"github.com/partnergate/partnergate/appservice/web/internal/goicon"
)

func main() {
	for _, size := range goicon.Sizes {
		if err := os.WriteFile(fmt.Sprintf("static/go/icon-%d.png", size), goicon.PNG(size), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
