package main

import (
	"github.com/Masterminds/semver/v3"
	"github.com/distribution/reference"
)

// pinsRequest is op pins: the version questions of the gate's versions-drift rule, answered with the libraries
// Flux and the container runtimes use, never by comparing strings. Constraints: an OCIRepository's spec.ref.semver
// and the pinned chart version; source-controller parses the constraint with Masterminds semver and installs the
// highest tag it admits. Images: image references as a chart renders them (repository:tag, maybe @digest).
type pinsRequest struct {
	Constraints []constraintQuery `json:"constraints,omitempty"`
	Images      []string          `json:"images,omitempty"`
}

type constraintQuery struct {
	Constraint string `json:"constraint"`
	Version    string `json:"version"`
}

// constraintAnswer: Pins is true when the constraint admits Version and no higher version (the highest tag it
// admits is then Version whenever the registry has it); Error is the parse error source-controller would report.
type constraintAnswer struct {
	Pins  bool   `json:"pins"`
	Error string `json:"error,omitempty"`
}

// imageAnswer: an image reference as the container runtime parses it (distribution/reference).
type imageAnswer struct {
	Name   string `json:"name,omitempty"`
	Tag    string `json:"tag,omitempty"`
	Digest string `json:"digest,omitempty"`
	Error  string `json:"error,omitempty"`
}

type pinsAnswer struct {
	Constraints []constraintAnswer `json:"constraints"`
	Images      []imageAnswer      `json:"images"`
}

func pinsAnswers(req pinsRequest) pinsAnswer {
	out := pinsAnswer{Constraints: make([]constraintAnswer, len(req.Constraints)), Images: make([]imageAnswer, len(req.Images))}
	for i, q := range req.Constraints {
		c, err := semver.NewConstraint(q.Constraint)
		if err != nil {
			out.Constraints[i].Error = err.Error()
			continue
		}
		v, err := semver.NewVersion(q.Version)
		if err != nil {
			out.Constraints[i].Error = err.Error()
			continue
		}
		// Higher versions the constraint would prefer: the next patch, minor and major (a range that admits any
		// higher release admits one of these or a later one of the same kind).
		pins := c.Check(v)
		for _, higher := range []semver.Version{v.IncPatch(), v.IncMinor(), v.IncMajor(), *semver.New(v.Major()+1000, 0, 0, "", "")} {
			if c.Check(&higher) {
				pins = false
			}
		}
		out.Constraints[i].Pins = pins
	}
	for i, image := range req.Images {
		ref, err := reference.ParseNormalizedNamed(image)
		if err != nil {
			out.Images[i].Error = err.Error()
			continue
		}
		out.Images[i].Name = ref.Name()
		if t, ok := ref.(reference.Tagged); ok {
			out.Images[i].Tag = t.Tag()
		}
		if d, ok := ref.(reference.Digested); ok {
			out.Images[i].Digest = d.Digest().String()
		}
	}
	return out
}
