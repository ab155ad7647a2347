// Command webwrappersite makes the desktop wrapper's download and update site from a built
// MSI (package webwrapper/site): the installer, the stable channel's feed and the download
// page, in a folder to publish on {webwrapper_site}. scripts/build-windows.sh runs it:
//
//	webwrappersite -msi SvcWebwrapper-2.1.5.9.msi -version 2.1.5.9 -out site/
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/partnergate/partnergate/webwrapper/site"
)

func main() {
	msi := flag.String("msi", "", "the built installer")
	version := flag.String("version", "", "its version, 2.1.5.<build>")
	out := flag.String("out", "", "the folder to write the site into")
	flag.Parse()
	if *msi == "" || *version == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: webwrappersite -msi FILE -version V -out DIR")
		os.Exit(2)
	}
	r, err := site.Write(*out, *msi, *version)
	if err != nil {
		fmt.Fprintf(os.Stderr, "webwrappersite: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%s: version %s, SHA-256 %s\n", *out, r.Version, r.SHA256)
}
