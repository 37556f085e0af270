// Command fluxbuild renders kustomize overlays and Flux Kustomizations offline, with the same
// library code kustomize-controller runs (github.com/fluxcd/pkg/kustomize): the generator that
// merges spec.patches/images/components/targetNamespace into the kustomization, the secure
// build with LoadRestrictionsNone, and postBuild variable substitution.
//
// Input on stdin, one JSON request per line: {"root": DIR, "skip_dirs": [NAME], "jobs": [{"id", "dir"}, {"id", "kustomization", "sources"}]}
// where "skip_dirs" are directory names that hold no configuration (harness/gate/sources.py
// SKIP_DIRS) and "sources" are the ConfigMaps/Secrets that substituteFrom may name. Output on stdout,
// one JSON line per request: one result per job with the rendered objects or the error kustomize-controller would
// report, plus the variables that strict substitution finds undefined.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/fluxcd/pkg/kustomize"
	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"github.com/fluxcd/pkg/sourceignore"
	"github.com/fluxcd/pkg/sourceignore/gitignore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
)

type job struct {
	ID            string                   `json:"id"`
	Dir           string                   `json:"dir,omitempty"`
	Kustomization map[string]interface{}   `json:"kustomization,omitempty"`
	Sources       []map[string]interface{} `json:"sources,omitempty"`
}

type request struct {
	Root     string   `json:"root"`
	SkipDirs []string `json:"skip_dirs"`
	Jobs     []job    `json:"jobs"`
}

type result struct {
	ID        string                   `json:"id"`
	Objects   []map[string]interface{} `json:"objects"`
	Error     string                   `json:"error,omitempty"`
	Undefined []string                 `json:"undefined,omitempty"`
}

func main() {
	// A short-lived helper of one gate run: collect garbage less often (unless GOGC says otherwise);
	// at Go's default the collector takes about a fifth of its CPU time on 2 cores.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	// One request per line; the answer to each is one line. A caller may send several requests
	// (the gate sends one per round of nested Flux Kustomizations) to one process: the tree is
	// copied once per root.
	in := bufio.NewReader(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	copies := map[string]string{}
	defer func() {
		for _, dir := range copies {
			os.RemoveAll(dir)
		}
	}()
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return
		}
		if err != nil && err != io.EOF {
			fatal("reading request: %v", err)
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			fatal("reading request: %v", err)
		}
		work, ok := copies[req.Root]
		if !ok {
			if work, err = copyRoot(req.Root, req.SkipDirs); err != nil {
				fatal("%v", err)
			}
			copies[req.Root] = work
		}
		results := make([]result, 0, len(req.Jobs))
		for _, j := range req.Jobs {
			r := run(work, j)
			// Errors name the private copy; the caller's reader knows the repository's paths.
			r.Error = strings.ReplaceAll(strings.ReplaceAll(r.Error, work+string(filepath.Separator), ""), work, ".")
			results = append(results, r)
		}
		if err := out.Encode(results); err != nil {
			fatal("%v", err)
		}
	}
}

func fatal(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "fluxbuild: "+format+"\n", args...)
	os.Exit(2)
}

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

func run(root string, j job) result {
	r := result{ID: j.ID, Objects: []map[string]interface{}{}}
	if j.Kustomization == nil {
		// A plain directory is built as `kustomize build --load-restrictor=LoadRestrictionsNone`
		// does. fluxcd's Build would reload the embedded OpenAPI schema on every call, which is
		// most of its cost and only matters for Flux Kustomizations.
		opts := krusty.MakeDefaultOptions()
		opts.LoadRestrictions = kustypes.LoadRestrictionsNone
		resources, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(root, j.Dir))
		if err != nil {
			r.Error = err.Error()
			return r
		}
		r.Objects, r.Error = toMaps(resources)
		return r
	}
	ks := unstructured.Unstructured{Object: j.Kustomization}
	path, _, _ := unstructured.NestedString(ks.Object, "spec", "path")
	dir, err := securePath(root, path)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if _, err := os.Stat(dir); err != nil {
		r.Error = fmt.Sprintf("kustomization path not found: %s", path)
		return r
	}
	action, err := kustomize.NewGenerator(root, ks).WriteFile(dir)
	if err != nil {
		r.Error = fmt.Sprintf("kustomize create failed: %v", err)
		return r
	}
	defer kustomize.CleanDirectory(dir, action)
	resources, err := secureBuild(root, dir)
	if err != nil {
		r.Error = fmt.Sprintf("kustomize build failed: %v", err)
		return r
	}
	kubeClient, err := sourcesClient(j.Sources, ks.GetNamespace())
	if err != nil {
		r.Error = err.Error()
		return r
	}
	ctx := context.Background()
	undefined := map[string]bool{}
	for _, res := range resources.Resources() {
		// Strict substitution is off by default in kustomize-controller; run it on a copy only
		// to learn which variables are referenced but never defined.
		if _, err := kustomize.SubstituteVariables(ctx, kubeClient, ks, res.DeepCopy(), kustomize.SubstituteWithStrict(true)); err != nil {
			undefined[err.Error()] = true
		}
		out, err := kustomize.SubstituteVariables(ctx, kubeClient, ks, res)
		if err != nil {
			r.Error = fmt.Sprintf("post build failed for '%s': %v", res.CurId().String(), err)
			return r
		}
		if out != nil {
			if _, err := resources.Replace(out); err != nil {
				r.Error = err.Error()
				return r
			}
		}
	}
	for msg := range undefined {
		r.Undefined = append(r.Undefined, msg)
	}
	r.Objects, r.Error = toMaps(resources)
	return r
}

// customOpenAPI records that a build loaded a kustomization's own `openapi:` schema into
// kustomize's process-global OpenAPI state, so the next build must start from a reset.
var customOpenAPI = false

// secureBuild is kustomize.SecureBuild (secure FS rooted at the source, LoadRestrictionsNone,
// builtin plugins only) without its reload of the builtin OpenAPI schema on every call, which
// costs ~0.2 s. kustomize-controller needs that reset because a kustomization's `openapi:`
// field changes global state; here the reset runs only after such a build, which gives the
// same result as resetting every time.
func secureBuild(root, dir string) (res resmap.ResMap, err error) {
	if customOpenAPI {
		customOpenAPI = false
		res, err = kustomize.SecureBuild(root, dir, false)
	} else {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("recovered from kustomize build panic: %v", r)
			}
		}()
		fs, ferr := securefs.MakeFsOnDiskSecure(root)
		if ferr != nil {
			return nil, ferr
		}
		opts := &krusty.Options{LoadRestrictions: kustypes.LoadRestrictionsNone, PluginConfig: kustypes.DisabledPluginConfig()}
		res, err = krusty.MakeKustomizer(opts).Run(fs, dir)
	}
	if usesOpenAPI(dir) {
		customOpenAPI = true
	}
	return res, err
}

func usesOpenAPI(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return true // unknown: be safe and reset before the next build
	}
	var k kustypes.Kustomization
	if err := sigsyaml.Unmarshal(data, &k); err != nil {
		return true
	}
	return len(k.OpenAPI) > 0
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
		return os.WriteFile(target, data, 0o644)
	})
}

// securePath resolves a Flux spec.path inside root, refusing paths that escape it.
func securePath(root, path string) (string, error) {
	clean := filepath.Join(root, filepath.Clean("/"+path))
	if !strings.HasPrefix(clean, filepath.Clean(root)) {
		return "", fmt.Errorf("path %q escapes the source root", path)
	}
	return clean, nil
}

// sources answers kustomize-controller's Get of the ConfigMaps and Secrets that
// postBuild.substituteFrom names, from the offline stand-ins the caller sends (a NotFound error
// for any other, as the apiserver gives). Only Get is used by SubstituteVariables; the embedded
// nil client.Client makes any other call fail loudly instead of answering wrongly.
type sources struct {
	client.Client
	configMaps map[types.NamespacedName]*corev1.ConfigMap
	secrets    map[types.NamespacedName]*corev1.Secret
}

func (s *sources) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch out := obj.(type) {
	case *corev1.ConfigMap:
		if cm, ok := s.configMaps[key]; ok {
			*out = *cm.DeepCopy()
			return nil
		}
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	case *corev1.Secret:
		if secret, ok := s.secrets[key]; ok {
			*out = *secret.DeepCopy()
			return nil
		}
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	return fmt.Errorf("fluxbuild: no offline stand-in for %T %s", obj, key)
}

func sourcesClient(items []map[string]interface{}, namespace string) (client.Client, error) {
	s := &sources{configMaps: map[types.NamespacedName]*corev1.ConfigMap{}, secrets: map[types.NamespacedName]*corev1.Secret{}}
	for _, item := range items {
		u := &unstructured.Unstructured{Object: item}
		if u.GetNamespace() == "" {
			u.SetNamespace(namespace)
		}
		key := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
		var err error
		switch u.GetKind() {
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cm)
			s.configMaps[key] = cm
		case "Secret":
			secret := &corev1.Secret{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, secret)
			s.secrets[key] = secret
		default:
			return nil, fmt.Errorf("substitution source %s/%s: kind must be ConfigMap or Secret", u.GetKind(), u.GetName())
		}
		if err != nil {
			return nil, fmt.Errorf("substitution source %s/%s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	return s, nil
}

func toMaps(resources resmap.ResMap) ([]map[string]interface{}, string) {
	out := make([]map[string]interface{}, 0, resources.Size())
	for _, res := range resources.Resources() {
		m, err := res.Map()
		if err != nil {
			return nil, err.Error()
		}
		out = append(out, m)
	}
	return out, ""
}
