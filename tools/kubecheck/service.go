package main

// A Service's REST storage (k8s.io/kubernetes pkg/registry/core/service/storage, storage.go) fills its cluster IPs before
// the strategy validates it: the generic store runs the storage's BeginCreate / BeginUpdate hook before rest.BeforeCreate
// / rest.BeforeUpdate (apiserver pkg/registry/generic/registry/store.go). Of those hooks the gate runs the field
// defaulting, copied here because it is unexported (normalizeClusterIPs, patchAllocatedValues, needsClusterIP,
// needsNodePort, needsHCNodePort, sameClusterIPs of v1.35.4): `clusterIP: None` alone gives clusterIPs [None] on create,
// and an update that leaves out what the cluster holds (its clusterIP(s), node ports) keeps them. The allocation itself
// (Allocators.allocateCreate: an IP from the cluster's service CIDR, the IP families the cluster's configuration
// defaults) needs the cluster's allocators and is not run: validation accepts the fields it fills left empty ("nil is ok,
// defaulted in alloc", ValidateServiceClusterIPsRelatedFields). No other kind the strategies map holds has such a hook.

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// serviceBegin is the storage's field defaulting of `obj` (create when `old` is nil); a no-op for other kinds.
func serviceBegin(obj, old runtime.Object) {
	svc, ok := obj.(*api.Service)
	if !ok {
		return
	}
	oldSvc, _ := old.(*api.Service)
	if oldSvc != nil {
		patchAllocatedValues(svc, oldSvc)
	}
	normalizeClusterIPs(svc, oldSvc)
}

// normalizeClusterIPs: storage.go normalizeClusterIPs (ClusterIP and ClusterIPs in sync).
func normalizeClusterIPs(newSvc, oldSvc *api.Service) {
	if oldSvc == nil {
		if len(newSvc.Spec.ClusterIP) > 0 && len(newSvc.Spec.ClusterIPs) == 0 {
			newSvc.Spec.ClusterIPs = []string{newSvc.Spec.ClusterIP}
		}
		return
	}
	if len(oldSvc.Spec.ClusterIPs) > 0 && len(newSvc.Spec.ClusterIPs) == 0 && oldSvc.Spec.ClusterIP == newSvc.Spec.ClusterIP {
		newSvc.Spec.ClusterIPs = oldSvc.Spec.ClusterIPs
	}
	if oldSvc.Spec.ClusterIP != newSvc.Spec.ClusterIP {
		if len(oldSvc.Spec.ClusterIP) > 0 && len(newSvc.Spec.ClusterIP) == 0 {
			if sameClusterIPs(oldSvc, newSvc) {
				newSvc.Spec.ClusterIPs = nil
			}
		} else if sameClusterIPs(oldSvc, newSvc) {
			newSvc.Spec.ClusterIPs = []string{newSvc.Spec.ClusterIP}
		}
	}
}

// patchAllocatedValues: storage.go patchAllocatedValues (what the storage allocated, kept when an update leaves it out).
func patchAllocatedValues(newSvc, oldSvc *api.Service) {
	if needsClusterIP(oldSvc) && needsClusterIP(newSvc) {
		if newSvc.Spec.ClusterIP == "" {
			newSvc.Spec.ClusterIP = oldSvc.Spec.ClusterIP
		}
		if len(newSvc.Spec.ClusterIPs) == 0 && len(oldSvc.Spec.ClusterIPs) > 0 {
			newSvc.Spec.ClusterIPs = oldSvc.Spec.ClusterIPs
		}
	}
	if needsNodePort(oldSvc) && needsNodePort(newSvc) {
		nodePortsUsed := func(svc *api.Service) sets.Int32 {
			used := sets.NewInt32()
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					used.Insert(p.NodePort)
				}
			}
			return used
		}
		used := nodePortsUsed(oldSvc).Intersection(nodePortsUsed(newSvc))
		np := map[string]int32{}
		for i := range oldSvc.Spec.Ports {
			np[oldSvc.Spec.Ports[i].Name] = oldSvc.Spec.Ports[i].NodePort
		}
		for i := range newSvc.Spec.Ports {
			p := &newSvc.Spec.Ports[i]
			if p.NodePort == 0 && !used.Has(np[p.Name]) {
				p.NodePort = np[p.Name]
			}
		}
	}
	if needsHCNodePort(oldSvc) && needsHCNodePort(newSvc) && newSvc.Spec.HealthCheckNodePort == 0 {
		newSvc.Spec.HealthCheckNodePort = oldSvc.Spec.HealthCheckNodePort
	}
}

func needsClusterIP(svc *api.Service) bool { return svc.Spec.Type != api.ServiceTypeExternalName }

func needsNodePort(svc *api.Service) bool {
	return svc.Spec.Type == api.ServiceTypeNodePort || (svc.Spec.Type == api.ServiceTypeLoadBalancer &&
		(svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts))
}

func needsHCNodePort(svc *api.Service) bool {
	return svc.Spec.Type == api.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == api.ServiceExternalTrafficPolicyLocal
}

func sameClusterIPs(lhs, rhs *api.Service) bool {
	if len(rhs.Spec.ClusterIPs) != len(lhs.Spec.ClusterIPs) {
		return false
	}
	for i, ip := range rhs.Spec.ClusterIPs {
		if lhs.Spec.ClusterIPs[i] != ip {
			return false
		}
	}
	return true
}
