// Updating: an object the cluster already holds (the base tree's render) changed to what the repository now renders,
// validated as kube-apiserver and Kueue validate an update, with their own code at the pinned versions: the
// custom-resource REST strategy through rest.BeforeUpdate (the OpenAPI schema with ratcheting, the
// x-kubernetes-validations CEL rules with oldSelf, transition rules such as LocalQueue's spec.clusterQueue
// `self == oldSelf`, metadata), then Kueue's validating webhooks' ValidateUpdate. kustomize-controller's apply
// dry-runs every object first; one the apiserver refuses as an update stops the whole layer (without spec.force).
// An "update" answer has one result per pair, as a "check" answer: stage "" (accepted), "validation" or "webhook".
package main

import (
	"context"

	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/webhooks"
)

// checkUpdates: per pair (objects[i] now, olds[i] as the cluster holds it), the update's verdict. A custom resource
// only: a built-in kind's update is tools/kubecheck's; an object whose create the checks refuse is theirs to report.
func (s *schemaSet) checkUpdates(objects, olds []map[string]interface{}, integrations map[string]bool) []checkResult {
	s.ready()
	ctx := context.WithValue(context.Background(), integrationsKey{}, integrations)
	results := make([]checkResult, len(objects))
	for i, obj := range objects {
		results[i] = checkResult{Errors: []fieldError{}}
		if i >= len(olds) {
			continue
		}
		newU, oldU := stored(obj), stored(olds[i])
		if newU == nil || oldU == nil || newU.GroupVersionKind() != oldU.GroupVersionKind() {
			continue
		}
		if crd := s.crds.lookup(newU.Object); crd != nil {
			if r := crd.checkUpdate(ctx, newU, oldU); r.Stage != "" {
				results[i] = r
			}
		}
	}
	return results
}

// stored: the object as the apiserver keeps it for its storage version (a Kueue v1beta1 object as v1beta2), nil when
// it does not convert (the create checks report that).
func stored(obj map[string]interface{}) *unstructured.Unstructured {
	u, err := toStored(&unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)})
	if err != nil {
		return nil
	}
	return u
}

// checkUpdate: the old object as the apiserver stored it (decoded, defaulted, through BeforeCreate), the new one
// decoded and defaulted, then rest.BeforeUpdate (the strategy's PrepareForUpdate and ValidateUpdate), then Kueue's webhook.
func (c *crdVersion) checkUpdate(ctx context.Context, newU, oldU *unstructured.Unstructured) checkResult {
	if err := c.build(); err != nil {
		failRequest("%v", err)
	}
	var ns string
	for _, u := range []*unstructured.Unstructured{oldU, newU} {
		c.decode(u)
		structuraldefaulting.Default(u.Object, c.structural)
		if ns = u.GetNamespace(); ns == "" && c.strategy.NamespaceScoped() {
			ns = "default"
			u.SetNamespace(ns)
		}
		u.SetResourceVersion("1") // the version the apply sends is the one it read
	}
	ctx = genericapirequest.WithNamespace(ctx, ns)
	rest.FillObjectMetaSystemFields(oldU)
	if err := rest.BeforeCreate(c.strategy, ctx, oldU); err != nil {
		return checkResult{} // never stored as written: the create checks of the base judged it
	}
	if err := rest.BeforeUpdate(c.strategy.(rest.RESTUpdateStrategy), ctx, newU, oldU); err != nil {
		return checkResult{Stage: "validation", Errors: statusErrors(err)}
	}
	if errs := webhookUpdateErrors(ctx, oldU, newU); len(errs) > 0 {
		return checkResult{Stage: "webhook", Errors: errs}
	}
	return checkResult{}
}

// webhookUpdateErrors runs Kueue's validating webhook's update validation for the object's kind (webhookErrors' kinds):
// a ClusterQueue's and a Workload's own, for the others the same validation as on create (a Ray object's: what its job
// webhook's ValidateUpdate adds is about a running job, whose status the repository does not hold).
func webhookUpdateErrors(ctx context.Context, oldU, newU *unstructured.Unstructured) []fieldError {
	gvk := newU.GroupVersionKind()
	switch {
	case gvk.GroupVersion() == kueue.GroupVersion && gvk.Kind == "ClusterQueue":
		oldCQ, newCQ := &kueue.ClusterQueue{}, &kueue.ClusterQueue{}
		if err := firstError(fromUnstructured(oldU, oldCQ), fromUnstructured(newU, newCQ)); err != nil {
			return err
		}
		return fieldErrors(webhooks.ValidateClusterQueueUpdate(oldCQ, newCQ))
	case gvk.GroupVersion() == kueue.GroupVersion && gvk.Kind == "Workload":
		oldWL, newWL := &kueue.Workload{}, &kueue.Workload{}
		if err := firstError(fromUnstructured(oldU, oldWL), fromUnstructured(newU, newWL)); err != nil {
			return err
		}
		return fieldErrors(webhooks.ValidateWorkloadUpdate(newWL, oldWL))
	}
	return webhookErrors(ctx, newU)
}

func firstError(errs ...[]fieldError) []fieldError {
	for _, e := range errs {
		if len(e) > 0 {
			return e
		}
	}
	return nil
}
