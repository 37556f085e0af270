package main

import (
	"strings"

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

// admitsHigher: whether the constraint admits a release above v. The library's own parse splits the constraint into
// its OR groups of AND'ed atoms (Constraints.String writes them back: " || " between groups, " " between atoms). Every
// atom (=, !=, <, <=, >, >=, ~, ^, x-ranges) admits or refuses a whole run of releases between boundaries that are its
// version or that version's next patch, minor or major; so the releases that decide are each boundary above v, the
// release right after it (inside the run that starts there) and v's own next patch. Checking these with the
// library's Check decides the question exactly, for `0.17.1 || 0.19.2` as for `>=0.17.1 <0.20` or `~0.17.1`.
func admitsHigher(c *semver.Constraints, v *semver.Version) bool {
	candidates := []semver.Version{v.IncPatch()}
	for _, group := range strings.Split(c.String(), " || ") {
		for _, atom := range strings.Fields(group) {
			bound, err := semver.NewVersion(wildcards.Replace(strings.TrimLeft(atom, "=!<>~^")))
			if err != nil {
				continue // "*" or "" (any version): v's next patch already answers
			}
			base := *semver.New(bound.Major(), bound.Minor(), bound.Patch(), "", "")
			for _, b := range []semver.Version{base, base.IncPatch(), base.IncMinor(), base.IncMajor()} {
				candidates = append(candidates, b, b.IncPatch())
			}
		}
	}
	for i := range candidates {
		if candidates[i].GreaterThan(v) && c.Check(&candidates[i]) {
			return true
		}
	}
	return false
}

// wildcards: an x-range's wildcard parts read as 0 (the library's own reading of 0.17.x is 0.17.0 with the patch free).
var wildcards = strings.NewReplacer("x", "0", "X", "0", "*", "0")

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
		out.Constraints[i].Pins = c.Check(v) && !admitsHigher(c, v)
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
