// Package seam is where the acp-guard command reaches what the library
// keeps behind its supported API: the classification engine inside an
// acpguard.Catalogue. `acp-guard classify --transcript` and `catalogue
// unknowns` replay a transcript with an engine that reports every
// evidence it is given, which no caller of the library needs.
//
// Package acpguard sets the functions when it is initialised; nothing
// else may. They take and return the library's *Catalogue as any, since
// this package cannot import the library that imports it.
package seam

import "github.com/acp-guard/acp-guard/classify"

var (
	// NewCatalogue returns an *acpguard.Catalogue classifying with e.
	NewCatalogue func(e *classify.Engine) any
	// Engine returns the engine of an *acpguard.Catalogue (nil for nil).
	Engine func(c any) *classify.Engine
)
