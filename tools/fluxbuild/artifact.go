package main

// The private copy of the repository the builds run in, as source-controller packs a GitRepository artifact.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fluxcd/pkg/sourceignore"
	"github.com/fluxcd/pkg/sourceignore/gitignore"
	yaml "go.yaml.in/yaml/v3"
)

// copyRoot makes the private copy kustomize-controller builds in: the generator writes a
// kustomization.yaml into the directory, and the checkout must stay untouched.
func copyRoot(root string, skipDirs []string) (string, error) {
	work, err := os.MkdirTemp("", "fluxbuild-")
	if err != nil {
		return "", err
	}
	skip := make(map[string]bool, len(skipDirs))
	for _, name := range skipDirs {
		skip[name] = true
	}
	if err := copyTree(root, work, skip); err != nil {
		os.RemoveAll(work)
		return "", fmt.Errorf("copying %s: %v", root, err)
	}
	return work, nil
}

// copyTree copies src to dst as source-controller packs a GitRepository artifact: without what
// the default and VCS patterns and the .sourceignore files exclude (fluxcd/pkg/sourceignore, the
// same matcher), and without the directories named in skip, which hold no configuration (a
// virtualenv, build output) and which copying would make the slowest part of the run.
func copyTree(src, dst string, skip map[string]bool) error {
	// .sourceignore files are read as the walk reaches their directory (each applies below its
	// own directory, by its domain), so nothing ignored or skipped is ever opened.
	var patterns []gitignore.Pattern
	ignored := sourceignore.NewDefaultMatcher(patterns, nil)
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		var parts []string
		if rel != "." {
			parts = strings.Split(filepath.ToSlash(rel), "/")
			if (d.IsDir() && skip[d.Name()]) || ignored.Match(parts, d.IsDir()) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if d.IsDir() {
			if found, err := sourceignore.ReadIgnoreFile(filepath.Join(path, sourceignore.IgnoreFile), parts); err != nil {
				return fmt.Errorf("reading %s: %v", filepath.Join(rel, sourceignore.IgnoreFile), err)
			} else if len(found) > 0 {
				patterns = append(patterns, found...)
				ignored = sourceignore.NewDefaultMatcher(patterns, nil)
			}
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if infiniteYAML(path, data) {
			return nil // kustomize would follow its aliases forever: left out, so the build says it misses the file (the gate names why)
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// maxDepth is how deep a YAML file may nest (harness/gate/sources.py MAX_DEPTH: the gate's reader says so at the file).
const maxDepth = 200

// infiniteYAML: a YAML file with an alias of a node that contains it, or one that expands past go-yaml's aliasing
// limit (go-yaml's decoder refuses both; kustomize's node walk does not check and recurses until the stack gives
// out), or one nested deeper than maxDepth.
func infiniteYAML(path string, data []byte) bool {
	ext := filepath.Ext(path)
	aliases := bytes.Contains(data, []byte("*")) && bytes.Contains(data, []byte("&"))
	deep := bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) >= maxDepth
	if (ext != ".yaml" && ext != ".yml") || (!aliases && !deep) {
		return false
	}
	for decoder := yaml.NewDecoder(bytes.NewReader(data)); aliases; {
		var doc interface{}
		if err := decoder.Decode(&doc); err != nil {
			if strings.Contains(err.Error(), "contains itself") || strings.Contains(err.Error(), "excessive aliasing") {
				return true
			}
			break
		}
	}
	for decoder := yaml.NewDecoder(bytes.NewReader(data)); deep; {
		var doc yaml.Node
		if err := decoder.Decode(&doc); err != nil {
			break
		}
		if depth(&doc, 0) > maxDepth {
			return true
		}
	}
	return false
}

// depth of a YAML node tree (aliases not followed: a cycle through one is the decoder's to refuse).
func depth(n *yaml.Node, level int) int {
	deepest := level
	if level > maxDepth {
		return level
	}
	for _, c := range n.Content {
		if d := depth(c, level+1); d > deepest {
			deepest = d
		}
	}
	return deepest
}
