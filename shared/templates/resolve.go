package templates

import (
	"path"

	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// The template languages.
const (
	langJinja    = "jinja"
	langStarlark = "starlark"
)

// template is a resource type that names a template file.
type template struct {
	// key is the template file's imports key.
	key string

	// scope is the imports prefix its own imports live under: "" for the config's imports,
	// registry.Prefix(type) for a fetched template, so that each template sees its own
	// helpers under the names it was written with.
	scope string

	lang string
}

// resolve decides whether typ is a template and finds it. Like Deployment Manager's
// expander, anything that is not a template is a primitive and passes through (nil): a
// template is a file with a template extension, a URL, or a registry reference.
func (e *expander) resolve(scope string, typ string, w where) (*template, error) {
	if registry.IsURL(typ) && !registry.IsTemplateFile(typ) {
		return nil, w.errorf("template URL %s must name a .py, .jinja or .star file", typ)
	}

	if registry.IsURL(typ) || registry.IsReference(typ) {
		return e.resolveRemote(typ, w)
	}

	if !registry.IsTemplateFile(typ) {
		return nil, nil
	}

	key := scope + typ
	_, ok := e.imports[key]
	if !ok {
		return nil, w.errorf("type %s names a template that is not among the imports: import it (the CLI's local mode imports templates next to the config by itself)", typ)
	}

	return &template{key: key, scope: scope, lang: languageOf(typ)}, nil
}

// resolveRemote finds a URL or registry template in the imports (where the CLI embeds what
// it fetched), and otherwise asks the fetcher.
func (e *expander) resolveRemote(typ string, w where) (*template, error) {
	prefix := registry.Prefix(typ)
	key := e.remoteKey(typ)
	if key == "" {
		if e.opts.Fetch == nil {
			return nil, w.errorf("template %s is not among the imports and nothing may fetch it here: embed it with the CLI, or list its registry in the daemon's configuration", typ)
		}

		bundle, err := e.opts.Fetch.Fetch(e.ctx, typ)
		if err != nil {
			return nil, &ExpandError{Template: w.template, Resource: w.resource, Msg: "fetch template " + typ + ": " + err.Error(), Err: err}
		}

		added := map[string][]byte{}
		bundle.Embed(added)

		// Copy on write: a render stopped at its time limit may still be reading the old map.
		imports := make(map[string][]byte, len(e.imports)+len(added))
		for k, v := range e.imports {
			imports[k] = v
		}

		for k, v := range added {
			imports[k] = v
			e.fetched[k] = v
		}

		e.imports = imports
		clear(e.views) // The views of the imports are stale now.
		clear(e.starlark.dicts)
		key = prefix + bundle.Template
		if registry.IsURL(typ) && key != typ {
			return nil, w.errorf("fetching %s gave template %s instead", typ, key)
		}
	}

	return &template{key: key, scope: prefix, lang: languageOf(key)}, nil
}

// remoteKey is the imports key of the template file of a URL or reference type, or "".
func (e *expander) remoteKey(typ string) string {
	if registry.IsURL(typ) {
		_, ok := e.imports[typ]
		if ok {
			return typ
		}

		return ""
	}

	ref, err := registry.ParseReference(typ)
	if err != nil {
		return ""
	}

	for _, ext := range registry.TemplateExtensions {
		key := registry.Prefix(typ) + ref.Template + ext
		_, ok := e.imports[key]
		if ok {
			return key
		}
	}

	return ""
}

func languageOf(file string) string {
	if path.Ext(file) == ".jinja" {
		return langJinja
	}

	return langStarlark
}
