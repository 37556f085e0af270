package main

import (
	"context"
	"errors"
	"regexp"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobs/raycluster"
	"sigs.k8s.io/kueue/pkg/controller/jobs/rayjob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/rayservice"
	"sigs.k8s.io/kueue/pkg/webhooks"
)

// webhookErrors runs Kueue's validating webhook for the object's kind, as registered by Kueue
// (v1beta2 for its own kinds; ray.io/v1 RayJob, and RayCluster and RayService where the manager's
// integrations.frameworks enables them, for the Ray integrations: zero-value webhooks, so only a queued object is
// judged, as with manageJobsWithoutQueueName off), under the manager's feature gates. Kinds Kueue has no validating
// webhook for return nil.
func webhookErrors(ctx context.Context, u *unstructured.Unstructured) []fieldError {
	u, err := toStored(u) // a v1beta1 object reaches Kueue's webhook as v1beta2
	if err != nil {
		return []fieldError{{Type: "InternalError", Detail: err.Error(), Message: err.Error()}}
	}
	gvk := u.GroupVersionKind()
	switch {
	case gvk.GroupVersion() == kueue.GroupVersion:
		switch gvk.Kind {
		case "ClusterQueue":
			cq := &kueue.ClusterQueue{}
			if err := webhookDecode(u, cq); err != nil {
				return err
			}
			return fieldErrors(webhooks.ValidateClusterQueue(cq))
		case "ResourceFlavor":
			rf := &kueue.ResourceFlavor{}
			if err := webhookDecode(u, rf); err != nil {
				return err
			}
			return fieldErrors(webhooks.ValidateResourceFlavor(rf))
		case "Workload":
			wl := &kueue.Workload{}
			if err := webhookDecode(u, wl); err != nil {
				return err
			}
			return fieldErrors(webhooks.ValidateWorkload(wl))
		case "Cohort":
			cohort := &kueue.Cohort{}
			if err := webhookDecode(u, cohort); err != nil {
				return err
			}
			_, err := (&webhooks.CohortWebhook{}).ValidateCreate(ctx, cohort)
			return aggregateErrors(err)
		default: // no webhook (WorkloadPriorityClass, LocalQueue, AdmissionCheck, ...): Kueue's controllers still read it typed
			if into, err := webhookScheme.New(gvk); err == nil {
				return typedDecode(u, into, "Kueue cannot decode the object as its controllers read it (the typed informer's list "+
					"fails on it, so Kueue's cache of the kind never syncs): ")
			}
		}
	case gvk.GroupVersion() == rayv1.GroupVersion && gvk.Kind == "RayJob":
		job := &rayv1.RayJob{}
		if err := webhookDecode(u, job); err != nil {
			return err
		}
		_, err := (&rayjob.RayJobWebhook{}).ValidateCreate(ctx, job)
		return aggregateErrors(err)
	case gvk.GroupVersion() == rayv1.GroupVersion && gvk.Kind == "RayCluster" && integrationEnabled(ctx, "ray.io/raycluster"):
		cluster := &rayv1.RayCluster{}
		if err := webhookDecode(u, cluster); err != nil {
			return err
		}
		_, err := (&raycluster.RayClusterWebhook{}).ValidateCreate(ctx, cluster)
		return aggregateErrors(err)
	case gvk.GroupVersion() == rayv1.GroupVersion && gvk.Kind == "RayService" && integrationEnabled(ctx, "ray.io/rayservice"):
		service := &rayv1.RayService{}
		if err := webhookDecode(u, service); err != nil {
			return err
		}
		_, err := (&rayservice.RayServiceWebhook{}).ValidateCreate(ctx, service)
		errs := aggregateErrors(err)
		for i, e := range errs { // Kueue names the Go field (RayClusterSpec); the RayService writes it as rayClusterConfig
			errs[i].Field = strings.Replace(e.Field, "spec.rayClusterSpec", "spec.rayClusterConfig", 1)
			errs[i].Message = strings.Replace(e.Message, "spec.rayClusterSpec", "spec.rayClusterConfig", 1)
		}
		return errs
	}
	return nil
}

type integrationsKey struct{}

// managerIntegrations: the integrations.frameworks of the Kueue manager the objects meet (managerRef); nil for a
// manager that keeps the chart's configuration, which enables every Ray integration (the chart's frameworks list).
// Called before the request takes its gates: loading a configuration takes them too.
func managerIntegrations(m *managerRef) map[string]bool {
	if m == nil || m.Config == nil {
		return nil
	}
	enabled := map[string]bool{}
	if problems, cfg := kueueConfig(*m.Config, ""); len(problems) == 0 && cfg != nil && cfg.Integrations != nil {
		for _, f := range cfg.Integrations.Frameworks { // (a configuration the manager refuses runs nothing: kueue-config)
			enabled[f] = true
		}
	}
	return enabled
}

// integrationEnabled: whether the manager runs Kueue's integration `framework`; with it off, Kueue's webhook for the
// kind does nothing (jobframework's setup registers a no-op one).
func integrationEnabled(ctx context.Context, framework string) bool {
	enabled, _ := ctx.Value(integrationsKey{}).(map[string]bool)
	return enabled == nil || enabled[framework]
}

// webhookScheme: the kinds Kueue's webhooks decode (controller-runtime's admission decoder, from the request's JSON).
var webhookScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(kueue.AddToScheme(s))
	utilruntime.Must(rayv1.AddToScheme(s))
	return s
}()

// unmarshalField: the field a JSON decoding error names ("... into Go struct field ClusterQueue.spec.x of type int32").
var unmarshalField = regexp.MustCompile(`Go struct field \w+\.(\S+) of type`)

// webhookDecode decodes the object as Kueue's webhooks get it: controller-runtime's admission decoder reads the request's
// JSON into the typed object, and answers Errored(400) when that fails (a value the apiserver accepts because it drops
// format: int32 from CRD schemas, e.g. maxPriorityThreshold 3000000000); then the typed conversion the checks use.
func webhookDecode(u *unstructured.Unstructured, into runtime.Object) []fieldError {
	if errs := typedDecode(u, into, "Kueue's webhook cannot decode the object (controller-runtime answers 400): "); errs != nil {
		return errs
	}
	return fromUnstructured(u, into)
}

// typedDecode reads the object's JSON into its typed Go object as Kueue's clients do (the scheme's JSON decoding: a
// number its int32 field cannot hold fails), the error said after `why`.
func typedDecode(u *unstructured.Unstructured, into runtime.Object, why string) []fieldError {
	raw, err := u.MarshalJSON()
	if err == nil {
		err = admission.NewDecoder(webhookScheme).DecodeRaw(runtime.RawExtension{Raw: raw}, into.DeepCopyObject())
	}
	if err != nil {
		path := ""
		if m := unmarshalField.FindStringSubmatch(err.Error()); m != nil {
			path = m[1]
		}
		msg := why + err.Error()
		return []fieldError{{Field: path, Type: "Invalid", Detail: msg, Message: msg}}
	}
	return nil
}

func fromUnstructured(u *unstructured.Unstructured, into interface{}) []fieldError {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return []fieldError{{Type: "InternalError", Detail: err.Error(), Message: err.Error()}}
	}
	return nil
}

// aggregateErrors turns a webhook's error (an aggregate of field errors) back into field errors.
func aggregateErrors(err error) []fieldError {
	if err == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		var list field.ErrorList
		rest := []fieldError{}
		for _, e := range agg.Errors() {
			var fe *field.Error
			if errors.As(e, &fe) {
				list = append(list, fe)
			} else {
				rest = append(rest, fieldError{Type: "Forbidden", Detail: e.Error(), Message: e.Error()})
			}
		}
		return append(fieldErrors(list), rest...)
	}
	return []fieldError{{Type: "Forbidden", Detail: err.Error(), Message: err.Error()}}
}
