// Rendering: kustomize overlays and Flux Kustomizations offline, with the same library code
// kustomize-controller runs (github.com/fluxcd/pkg/kustomize): the generator that merges
// spec.patches/images/components/targetNamespace into the kustomization, the secure build with
// LoadRestrictionsNone, and postBuild variable substitution; then what the controller does beyond the build
// (health-check CEL, SOPS decryption, the metadata its apply sets: fluxapply.go).
//
// A render request {"session", "root", "prefix", "skip_dirs", "jobs": [{"id", "dir"}, {"id", "kustomization",
// "sources"}]} names directories that hold no configuration (harness/gate/sources.py SKIP_DIRS) and
// the ConfigMaps/Secrets that substituteFrom may name ("sources"). Its answer has one result per job
// with the rendered objects or the error kustomize-controller would report, plus the variables that
// strict substitution finds undefined. The tree is copied once per session and root. "prefix" is where root lies in its
// Git work tree ("" at its top): a Flux Kustomization's spec.path is relative to the Git root, the root of the
// GitRepository's artifact (harness/gate/flux_paths.py).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/kustomize"
	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"
)

type job struct {
	ID            string                   `json:"id"`
	Dir           string                   `json:"dir,omitempty"`
	Kustomization map[string]interface{}   `json:"kustomization,omitempty"`
	Sources       []map[string]interface{} `json:"sources,omitempty"`
}

type result struct {
	ID        string                   `json:"id"`
	Objects   []map[string]interface{} `json:"objects"`
	Error     string                   `json:"error,omitempty"`
	Undefined []string                 `json:"undefined,omitempty"`
}

var (
	rendering sync.Mutex               // kustomize keeps process-global state: one render at a time
	copies    = map[[2]string]string{} // (session, root) -> the private copy builds run in
	ahead     *prerendered             // the plain builds made at start (--prerender), for the session that asks first
)

// probe is a render in a scratch tree: `files` of the session's copy (what else the jobs read is not
// there) with `overlay` written over them (rewritten kustomization.yaml files), removed afterwards.
type probe struct {
	Files   []string          `json:"files"`
	Overlay map[string]string `json:"overlay"`
}

func render(session, root, prefix string, skipDirs []string, jobs []job, p *probe) []result {
	rendering.Lock()
	defer rendering.Unlock()
	key := [2]string{session, root}
	work, ok := copies[key]
	if !ok && p == nil && ahead != nil && !ahead.taken && ahead.root == root && slices.Equal(ahead.skipDirs, skipDirs) {
		work, ok, ahead.taken = ahead.work, true, true
		copies[key] = work
	}
	if !ok {
		var err error
		if work, err = copyRoot(root, skipDirs); err != nil {
			failRequest("%v", err)
		}
		copies[key] = work
	}
	if p != nil {
		scratch, err := p.tree(work)
		if err != nil {
			failRequest("%v", err)
		}
		defer os.RemoveAll(scratch)
		work = scratch
	}
	results := make([]result, 0, len(jobs))
	for _, j := range jobs {
		if built, done := ahead.of(work, j); done {
			results = append(results, built)
			continue
		}
		r := run(work, prefix, j)
		// Errors name the private copy; the caller's reader knows the repository's paths.
		r.Error = strings.ReplaceAll(strings.ReplaceAll(r.Error, work+string(filepath.Separator), ""), work, ".")
		results = append(results, r)
	}
	return results
}

// tree makes the probe's scratch tree from the session's copy `work` (so .sourceignore holds as there).
func (p *probe) tree(work string) (string, error) {
	scratch, err := os.MkdirTemp("", "fluxbuild-probe-")
	if err != nil {
		return "", err
	}
	write := func(rel string, data []byte) error {
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("probe file %q is not inside the repository", rel)
		}
		target := filepath.Join(scratch, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	}
	for _, rel := range p.Files {
		data, err := os.ReadFile(filepath.Join(work, filepath.Clean(rel)))
		if err == nil {
			err = write(rel, data)
		} else if os.IsNotExist(err) {
			err = nil // not in the source artifact (.sourceignore): the build reports what it misses
		}
		if err != nil {
			os.RemoveAll(scratch)
			return "", err
		}
	}
	for rel, text := range p.Overlay {
		if err := write(rel, []byte(text)); err != nil {
			os.RemoveAll(scratch)
			return "", err
		}
	}
	return scratch, nil
}

// release removes a session's copies.
func release(session string) {
	rendering.Lock()
	defer rendering.Unlock()
	for key, dir := range copies {
		if key[0] == session {
			os.RemoveAll(dir)
			delete(copies, key)
		}
	}
}

// removeCopies is the clean-up on exit (best effort: a failing render may hold the lock).
func removeCopies() {
	for _, dir := range copies {
		os.RemoveAll(dir)
	}
}

func run(root, prefix string, j job) result {
	r := result{ID: j.ID, Objects: []map[string]interface{}{}}
	if j.Kustomization == nil {
		// A plain directory is built as `kustomize build --load-restrictor=LoadRestrictionsNone`
		// does. fluxcd's Build would reload the embedded OpenAPI schema on every call, which is
		// most of its cost and only matters for Flux Kustomizations.
		opts := krusty.MakeDefaultOptions()
		opts.LoadRestrictions = kustypes.LoadRestrictionsNone
		// In the repository's copy, as kustomize-controller builds in its source artifact: a path that leaves it (a
		// resource ../../../etc/hostname) is refused, never read from the machine the gate runs on.
		fs, err := securefs.MakeFsOnDiskSecure(root)
		if err != nil {
			r.Error = err.Error()
			return r
		}
		resources, err := krusty.MakeKustomizer(opts).Run(fs, filepath.Join(root, j.Dir))
		if err != nil {
			r.Error = err.Error()
			return r
		}
		r.Objects, r.Error = toMaps(resources)
		return r
	}
	ks := unstructured.Unstructured{Object: j.Kustomization}
	if msg := healthCheckError(&ks); msg != "" { // the controller's first check: nothing is built or applied
		r.Error = msg
		return r
	}
	path, _, _ := unstructured.NestedString(ks.Object, "spec", "path")
	dir, err := securePath(root, prefix, path)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if _, err := os.Stat(dir); err != nil {
		r.Error = fmt.Sprintf("kustomization path not found: %s", path)
		return r
	}
	// The original kustomization.yaml is saved and restored by CleanDirectory: the copy is shared by every cluster's
	// Kustomizations, and one's patches must not stay for the next one on the same path.
	action, err := kustomize.NewGenerator(root, ks).WriteFile(dir, kustomize.WithSaveOriginalKustomization())
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
	decrypts := sopsDecrypts(&ks)
	for _, res := range resources.Resources() {
		if decrypts { // decrypted before substitution, as the controller's build loop does
			if _, err := decryptOffline(res); err != nil {
				r.Error = fmt.Sprintf("decryption failed for '%s/%s': %v", res.GetGvk(), res.GetName(), err)
				return r
			}
		}
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
	if r.Objects, r.Error = toMaps(resources); r.Error == "" {
		if r.Error = asApplied(r.Objects, &ks); r.Error != "" {
			r.Objects = []map[string]interface{}{} // the apply fails before it applies anything
		}
	}
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
	var data []byte
	err := os.ErrNotExist
	for _, name := range konfig.RecognizedKustomizationFileNames() { // kustomize's own names, in its order
		if data, err = os.ReadFile(filepath.Join(dir, name)); err == nil {
			break
		}
	}
	if err != nil {
		return true // unknown: be safe and reset before the next build
	}
	var k kustypes.Kustomization
	if err := sigsyaml.Unmarshal(data, &k); err != nil {
		return true
	}
	return len(k.OpenAPI) > 0
}

// securePath resolves a Flux spec.path inside root, refusing paths that escape it. The path is relative to the Git
// root, normalised as kustomize-controller's securejoin does; root is the Git work tree's directory `prefix`, and a
// path outside it is none of root's.
func securePath(root, prefix, path string) (string, error) {
	inside := filepath.Clean("/" + path)
	if prefix != "" {
		rel, err := filepath.Rel("/"+prefix, inside)
		if err != nil || !filepath.IsLocal(rel) {
			return "", fmt.Errorf("kustomization path not found: %s", path) // (one outside that exists is not sent: flux-path-outside)
		}
		inside = "/" + rel
	}
	clean := filepath.Join(root, inside)
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

// toMaps serialises the build's objects as kustomize's output does (`resmap.AsYaml`, which kustomize-controller calls
// before it applies: `Resource.MarshalJSON`), so an object kustomize cannot serialise fails the build as it fails
// there: a nested mapping key that YAML reads as no string (`1: x`) gives "json: unsupported type:
// map[interface {}]interface {}".
func toMaps(resources resmap.ResMap) ([]map[string]interface{}, string) {
	out := make([]map[string]interface{}, 0, resources.Size())
	for _, res := range resources.Resources() {
		if _, err := res.MarshalJSON(); err != nil {
			return nil, fmt.Sprintf("kustomize build failed: %v", err)
		}
		m, err := res.Map()
		if err != nil {
			return nil, err.Error()
		}
		out = append(out, m)
	}
	return out, ""
}
