package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/orchestrator/orchestrator/testrun"
)

// canaryLife is how long a jail's canary is kept in the gate's cache folder and used by
// every orchestrator that shares that folder, before a new one is drawn.
const canaryLife = 24 * time.Hour

// canaryFile is the canary's file in the gate's cache folder.
const canaryFile = "canary.json"

// A keptCanary is what canaryFile holds.
type keptCanary struct {
	Token   string    `json:"token"`
	Message string    `json:"message"`
	Drawn   time.Time `json:"drawn"`
}

// jailCanary returns the canary that every jail whose cache folder is cache plants: the
// one kept there if it was drawn less than canaryLife ago, else a new one, kept there for
// the next (SPEC §7.6). Its file, like the compiled test packages that hold its name, is only
// the gate's: agents never see the cache folder, and test binaries run where it is an
// empty folder. A file that cannot be read, or holds no canary NewCanary could draw, is
// replaced; one that cannot be written leaves the new canary to this jail alone.
func jailCanary(cache string, now time.Time) testrun.Canary {
	p := filepath.Join(cache, canaryFile)
	if b, err := os.ReadFile(p); err == nil {
		var k keptCanary
		_ = json.Unmarshal(b, &k)
		c := testrun.Canary{Token: k.Token, Message: k.Message}
		if age := now.Sub(k.Drawn); c.WellFormed() && age >= 0 && age < canaryLife {
			return c
		}
	}
	c := testrun.NewCanary()
	b, _ := json.Marshal(keptCanary{Token: c.Token, Message: c.Message, Drawn: now})
	tmp, err := os.CreateTemp(cache, ".canary-*")
	if err != nil {
		return c
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		os.Remove(tmp.Name())
	}
	return c
}
