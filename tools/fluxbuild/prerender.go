package main

// Prerendering: the plain kustomization directories of the repository the gate is about to check, built as fluxbuild
// starts (--prerender), while the gate's Python is still loading; a render request of the same repository then gets them.

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/api/konfig"
	kustypes "sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"
)

// prerendered: every plain kustomization directory of a repository, built in a copy at start while the caller is still
// loading (scripts/validate's Python), with the same code a render request runs. The first session that renders that root
// with the same skip list takes the copy as its own and gets these results for its plain jobs, built from the same files.
type prerendered struct {
	root     string
	skipDirs []string
	work     string
	results  map[string]result // directory (relative to root) -> its build
	taken    bool
}

// prerender builds every plain kustomization directory of root in a copy, holding the render lock (call it with the
// lock held: a request that arrives meanwhile waits for it, as for any render).
func prerender(root string, skipDirs []string) {
	defer rendering.Unlock()
	if trace != nil {
		began := time.Now()
		defer func() {
			built := 0
			if ahead != nil {
				built = len(ahead.results)
			}
			trace.Printf("%-12s        jobs=%-2d began %6.1f ms, took %6.1f ms", "prerender", built,
				float64(began.Sub(started).Microseconds())/1000, float64(time.Since(began).Microseconds())/1000)
		}()
	}
	work, err := copyRoot(root, skipDirs)
	if err != nil {
		return // the session's own copy reports it
	}
	pre := &prerendered{root: root, skipDirs: skipDirs, work: work, results: map[string]result{}}
	_ = filepath.WalkDir(work, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || !isBuildable(path) {
			return nil
		}
		rel, _ := filepath.Rel(work, path)
		r := run(work, "", job{ID: rel, Dir: rel})
		r.Error = strings.ReplaceAll(strings.ReplaceAll(r.Error, work+string(filepath.Separator), ""), work, ".")
		pre.results[filepath.ToSlash(rel)] = r
		return nil
	})
	ahead = pre
}

// isBuildable: the directory has a kustomization file (kustomize's names) that is not a Component.
func isBuildable(dir string) bool {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			var k kustypes.Kustomization
			return sigsyaml.Unmarshal(data, &k) == nil && k.Kind != kustypes.ComponentKind
		}
	}
	return false
}

// of: the prerendered build of a plain job of the session whose copy is the prerender's, if there is one.
func (pre *prerendered) of(work string, j job) (result, bool) {
	if pre == nil || work != pre.work || j.Kustomization != nil {
		return result{}, false
	}
	r, found := pre.results[filepath.ToSlash(filepath.Clean(j.Dir))]
	r.ID = j.ID
	return r, found
}
