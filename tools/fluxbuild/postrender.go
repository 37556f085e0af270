package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/apis/kustomize"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// postRenderer is a HelmRelease's spec.postRenderers entry (helm-controller v1.6.3 api/v2 PostRenderer).
type postRenderer struct {
	Kustomize *struct {
		Patches []kustomize.Patch `json:"patches,omitempty"`
		Images  []kustomize.Image `json:"images,omitempty"`
	} `json:"kustomize,omitempty"`
}

// filenameAnnotation is the annotation Helm v4 (pkg/action annotateAndMerge, splitAndDeannotate) carries each
// document's template in through the post-renderers.
const filenameAnnotation = "postrenderer.helm.sh/postrender-filename"

// postRender applies a HelmRelease's post-renderers to the rendered objects as helm-controller v1.6.3 does: its
// internal/postrender Kustomize (a kustomization in memory of the rendered stream, the patches and images, built by
// krusty without plugins and load restrictions), in the order written, chained; the strategy decides whether hooks go
// with the templates (combined, the default), apart (separate) or not at all (nohooks). The objects keep the template
// Helm's filename annotation carries back.
func postRender(objects []helmObject, renderers []postRenderer, strategy string) ([]helmObject, error) {
	var templates, hooks []helmObject
	for _, o := range objects {
		meta, _ := o.Object["metadata"].(map[string]interface{})
		annotations, _ := meta["annotations"].(map[string]interface{})
		if _, hook := annotations["helm.sh/hook"]; hook && strategy != "" && strategy != "combined" {
			hooks = append(hooks, o)
		} else {
			templates = append(templates, o)
		}
	}
	out, err := postRenderStream(templates, renderers)
	if err != nil || len(hooks) == 0 {
		return out, err
	}
	if strategy == "separate" {
		if hooks, err = postRenderStream(hooks, renderers); err != nil {
			return nil, err
		}
	}
	return append(out, hooks...), nil
}

func postRenderStream(objects []helmObject, renderers []postRenderer) ([]helmObject, error) {
	if len(objects) == 0 {
		return nil, nil
	}
	var stream strings.Builder
	for _, o := range objects {
		obj := o.Object // annotated in place: the caller keeps only what the post-renderers give back
		meta, _ := obj["metadata"].(map[string]interface{})
		if meta == nil {
			meta = map[string]interface{}{}
			obj["metadata"] = meta
		}
		annotations, _ := meta["annotations"].(map[string]interface{})
		if annotations == nil {
			annotations = map[string]interface{}{}
			meta["annotations"] = annotations
		}
		annotations[filenameAnnotation] = o.Template
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		stream.WriteString("---\n")
		stream.Write(data)
	}
	manifests := stream.String()
	var out []helmObject
	for _, r := range renderers {
		if r.Kustomize == nil {
			continue
		}
		built, err := kustomizePostRender(manifests, r.Kustomize.Patches, r.Kustomize.Images)
		if err != nil {
			return nil, fmt.Errorf("error while running post render on files: %w", err)
		}
		manifests = built
	}
	for _, doc := range strings.Split(manifests, "\n---\n") {
		obj := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("error while parsing post rendered output: %w", err)
		}
		if len(obj) == 0 {
			continue
		}
		template := "generated-by-postrender.yaml"
		if meta, ok := obj["metadata"].(map[string]interface{}); ok {
			if annotations, ok := meta["annotations"].(map[string]interface{}); ok {
				if t, ok := annotations[filenameAnnotation].(string); ok {
					template = t
				}
				delete(annotations, filenameAnnotation)
				if len(annotations) == 0 {
					delete(meta, "annotations")
				}
			}
		}
		out = append(out, helmObject{Template: template, Object: obj})
	}
	return out, nil
}

// kustomizePostRender is helm-controller v1.6.3's internal/postrender Kustomize.Run (not importable: internal),
// with the fields it reads: the rendered stream as a resource of an in-memory kustomization with the patches and
// images, built by krusty without plugins and load restrictions.
func kustomizePostRender(manifests string, patches []kustomize.Patch, images []kustomize.Image) (string, error) {
	fs := filesys.MakeFsInMemory()
	cfg := kustypes.Kustomization{}
	cfg.APIVersion, cfg.Kind = kustypes.KustomizationVersion, kustypes.KustomizationKind
	for _, image := range images {
		cfg.Images = append(cfg.Images, kustypes.Image{Name: image.Name, NewName: image.NewName, NewTag: image.NewTag, Digest: image.Digest})
	}
	const input = "helm-output.yaml"
	cfg.Resources = append(cfg.Resources, input)
	if err := fs.WriteFile(input, []byte(manifests)); err != nil {
		return "", err
	}
	for _, m := range patches {
		var target *kustypes.Selector
		if s := m.Target; s != nil {
			target = &kustypes.Selector{LabelSelector: s.LabelSelector, AnnotationSelector: s.AnnotationSelector}
			target.Name, target.Namespace = s.Name, s.Namespace
			target.Gvk.Group, target.Gvk.Kind, target.Gvk.Version = s.Group, s.Kind, s.Version
		}
		cfg.Patches = append(cfg.Patches, kustypes.Patch{Patch: m.Patch, Target: target})
	}
	kustomization, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	if err := fs.WriteFile("kustomization.yaml", kustomization); err != nil {
		return "", err
	}
	rendering.Lock() // kustomize keeps process-global state (render.go)
	defer rendering.Unlock()
	resMap, err := krusty.MakeKustomizer(&krusty.Options{LoadRestrictions: kustypes.LoadRestrictionsNone, PluginConfig: kustypes.DisabledPluginConfig()}).Run(fs, ".")
	if err != nil {
		return "", err
	}
	data, err := resMap.AsYaml()
	return string(data), err
}
