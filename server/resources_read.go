package server

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The resource handlers that start no operation: get, list and preview. Apart from
// resources.go because they answer synchronously, from the backend's stacks and the stored
// specs, and never reserve a stack.

// get: GET on a resource: spec, status and outputs (secrets redacted).
func (h resources) get(c echo.Context) error {
	ctx := c.Request().Context()
	r, stack, rec, err := h.stored(c)
	if err != nil {
		return err
	}
	st, err := h.s.status(ctx, stack)
	if err != nil {
		return err
	}
	if !h.belongs(r, rec, st) {
		return &NotFoundError{What: r.String()}
	}
	v, err := h.s.view(ctx, r, stack, rec, st)
	if err != nil {
		return err
	}
	if st != nil {
		outs, err := h.s.eng.Outputs(ctx, stack)
		switch {
		case errors.Is(err, engine.ErrNotFound):
		case err != nil:
			return err
		case len(outs) > 0:
			v.Status.Outputs = redactOutputs(outs)
		}
	}
	return c.JSON(http.StatusOK, v)
}

// list: GET on a collection, a page at a time. Items come from the backend's stacks (every
// door's) and from specs stored here whose stacks do not exist yet, in name order; the
// continue token is the last name of the page. Outputs are left out (GET one resource).
func (h resources) list(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := h.ref(c, false)
	if err != nil {
		return err
	}
	limit, after, err := pageParams(c)
	if err != nil {
		return err
	}
	prefix := r.stackPrefix()
	recs, err := h.s.specs.List(ctx, prefix)
	if err != nil {
		return err
	}
	summaries, err := h.s.eng.List(ctx, prefix)
	if err != nil {
		return err
	}
	byName := map[string]*Record{}
	for i := range recs {
		byName[recs[i].Name] = &recs[i]
	}
	for _, s := range summaries {
		name := strings.TrimPrefix(s.Name, prefix)
		// Only stacks named exactly as this kind names them: a personal job type's shared
		// stack ("…_shared") and hash-shortened names are not resources of the collection.
		probe := r
		probe.name = name
		if st, err := probe.stack(); err != nil || st != s.Name || !reDNSLabel.MatchString(name) {
			continue
		}
		if _, ok := byName[name]; !ok {
			byName[name] = nil
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		if n > after {
			names = append(names, n)
		}
	}
	sort.Strings(names)

	items := []ResourceView{}
	next := ""
	for len(names) > 0 && len(items) < limit {
		batch := names[:min(limit-len(items), len(names))]
		names = names[len(batch):]
		views, err := h.views(ctx, r, batch, byName)
		if err != nil {
			return err
		}
		for i, v := range views {
			if v != nil {
				items = append(items, *v)
			}
			next = batch[i]
		}
	}
	out := ResourceList{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(h.k.kind) + "List", Items: items}
	if len(names) > 0 {
		out.Metadata.Continue = encodeContinue(next)
	}
	return c.JSON(http.StatusOK, out)
}

// views reads the status of a batch of names concurrently (each costs CLI processes; the
// engine bounds them globally as well). A nil view is a name that does not belong (a server
// of another tenant, a stack removed meanwhile).
func (h resources) views(ctx context.Context, r ref, names []string, recs map[string]*Record) ([]*ResourceView, error) {
	out := make([]*ResourceView, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, h.s.cfg.ListConcurrency)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			item := r
			item.name = name
			stack, err := item.stack()
			if err != nil {
				errs[i] = err
				return
			}
			st, err := h.s.status(ctx, stack)
			if err != nil {
				errs[i] = err
				return
			}
			if !h.belongs(item, recs[name], st) {
				return
			}
			out[i], errs[i] = h.s.view(ctx, item, stack, recs[name], st)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// preview: POST …/{name}/preview, synchronous. With a body it previews that document (checked
// like a PUT); without one, the stored spec, which shows drift between the spec and the
// cluster. 200 with the structured diff; nothing changes. With ?save=true the plan is saved
// for a later apply (approvals.go).
func (h resources) preview(c echo.Context) error {
	ctx := c.Request().Context()
	r, stack, rec, err := h.stored(c)
	if err != nil {
		return err
	}
	save, err := saveParam(c)
	if err != nil {
		return err
	}
	var obj v1alpha1.Object
	var t kinds.Target
	if bodyOf(c) != nil {
		if t, obj, err = h.decodeBody(c, r); err != nil {
			return err
		}
		if err := h.checkUpdate(obj, rec); err != nil {
			return err
		}
	} else {
		if rec == nil {
			st, err := h.s.status(ctx, stack)
			if err != nil {
				return err
			}
			if !h.belongs(r, nil, st) {
				return &NotFoundError{What: r.String()}
			}
			return invalid("this API holds no spec for "+r.String()+" (made by "+doorName(st.ManagedBy)+"): send the document to preview",
				FieldProblem{Reason: "required", Detail: "a body is required"})
		}
		if rec.Parent != "" && h.k.parent != nil && rec.Parent != r.tenant {
			return &NotFoundError{What: r.String()}
		}
		if rec.Redacted {
			return invalid("the stored spec has secret values the API does not keep: send the full document to preview it",
				FieldProblem{Reason: "required", Detail: "a body is required"})
		}
		stored, err := h.k.fromRecord(rec)
		if err != nil {
			return err
		}
		if t, obj, err = kinds.Prepare(stored); err != nil {
			return err
		}
		// The policy may have changed since the spec was stored.
		if err := h.s.checkSources(ctx, obj); err != nil {
			return err
		}
	}
	if save {
		return h.savePreview(c, r, t, obj, rec)
	}
	out, err := h.s.run.Preview(ctx, obj, runner.Op{Door: engine.ManagedByAPI, Message: "tfrs api: preview " + r.String()})
	if err != nil {
		return err
	}
	rep := diff.FromOutcome(out)
	if out.Own() == nil && rep.Skipped == "" && t.Shared != "" {
		rep.Skipped = "the job type's shared stack does not exist yet, so the tenant's own stack cannot be previewed before it is up"
	}
	return c.JSON(http.StatusOK, rep)
}
