package acpguard

import (
	"context"

	"github.com/acp-guard/acp-guard/internal/pipeline"
)

// OverlayStore is the value of Config.CatalogueOverlay (--catalogue-overlay
// store) that takes the overlay published in the circuits' store
// (`acp-guard catalogue publish`) instead of a file.
const OverlayStore = "store"

// PublishCatalogueOverlay validates the overlay document doc over the
// embedded catalogue and publishes it under the circuit namespace in the
// store that circuits names (a --circuits value: file, in stateDir, or a
// nats:// URL), where every session started with --catalogue-overlay
// store picks it up between turns. doc nil clears the published overlay.
// It returns the version sessions will report (embedded+overlay, or the
// embedded one for a clearing).
func PublishCatalogueOverlay(ctx context.Context, circuits, stateDir, namespace string, doc []byte) (string, error) {
	return pipeline.PublishOverlay(ctx, circuits, stateDir, namespace, doc)
}
