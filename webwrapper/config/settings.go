package config

// The settings of the interface's two tables (B-CFG-USER, B-CFG-APP), DistributorName,
// which the original's readme knows, Log, the original's own setting of its log file, and
// UpdateSite, the update site ({webwrapper_site})
// under which UpdatePath names the channel. Any setting may be given in either file; a
// non-blank user value wins.
const (
	BrowserEngine   = "BrowserEngine"
	CheckForUpdates = "CheckForUpdates"
	Top             = "Top"
	Left            = "Left"
	Height          = "Height"
	Width           = "Width"
	Maximized       = "Maximized"
	MinimizeOnExit  = "MinimizeOnExit"
	UpdatePath      = "UpdatePath"
	ZoomFactor      = "ZoomFactor"

	AdfsUrl               = "AdfsUrl"
	AppUrl                = "AppUrl"
	Culture               = "Culture"
	Debug                 = "Debug"
	Log                   = "Log"
	ProtocolProvider      = "ProtocolProvider"
	RememberLoggedInUser  = "RememberLoggedInUser"
	SignonWithWindowsUser = "SignonWithWindowsUser"
	DistributorName       = "DistributorName"
	UpdateSite            = "UpdateSite"
)

type kind int

const (
	kindString kind = iota
	kindBool
	kindInt
	kindFloat
	kindEngine
)

type setting struct {
	def  string
	kind kind
}

// settings holds every known setting's default. The spec gives "True" as the default of
// the four geometry numbers, which only fits Maximized; blank (the browser's default
// geometry) stands in for it. ZoomFactor's "none" is blank, read as 1.
var settings = map[string]setting{
	BrowserEngine:   {"EoWebBrowser", kindEngine},
	CheckForUpdates: {"True", kindBool},
	Top:             {"", kindInt},
	Left:            {"", kindInt},
	Height:          {"", kindInt},
	Width:           {"", kindInt},
	Maximized:       {"True", kindBool},
	MinimizeOnExit:  {"True", kindBool},
	UpdatePath:      {"", kindString},
	ZoomFactor:      {"", kindFloat},

	AdfsUrl:               {"", kindString},
	AppUrl:                {"http://localhost:8080/app/signin", kindString},
	Culture:               {"", kindString},
	Debug:                 {"False", kindBool},
	Log:                   {"False", kindBool},
	ProtocolProvider:      {"Svc.Desktop.Legacy3.Component, Svc.Desktop", kindString},
	RememberLoggedInUser:  {"True", kindBool},
	SignonWithWindowsUser: {"False", kindBool},
	DistributorName:       {"", kindString},
	UpdateSite:            {"http://localhost:8080/webwrapper/", kindString},
}

// Engine is a BrowserEngine value.
type Engine string

// The BrowserEngine values. EoWebBrowser is the chromedp engine on a Chromium-family
// browser; WebViewBrowser is the same engine preferring Edge on Windows (the newer engine
// of the operating system); InternetExplorer has no counterpart.
const (
	EoWebBrowser     Engine = "EoWebBrowser"
	WebViewBrowser   Engine = "WebViewBrowser"
	InternetExplorer Engine = "InternetExplorer"
)
