package rest

import (
	"context"
	"log/slog"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
)

// loggingEvents is a log handler that also sends every record it writes as a "logging"
// event on /1.0/events, as LXD does: `lxd-deploy monitor --type logging` follows the daemon's
// log from afar. The events carry no deployment, so only admins see them. The event server
// must log through another handler, or a dropped-event warning would loop back here.
type loggingEvents struct {
	base   slog.Handler
	events *events.Server
	attrs  []slog.Attr
	group  string
}

// WithLoggingEvents returns a logger writing to logger's handler and to the event server.
func WithLoggingEvents(logger *slog.Logger, server *events.Server) *slog.Logger {
	return slog.New(&loggingEvents{base: logger.Handler(), events: server})
}

func (h *loggingEvents) Enabled(ctx context.Context, level slog.Level) bool {
	return h.base.Enabled(ctx, level)
}

func (h *loggingEvents) Handle(ctx context.Context, record slog.Record) error {
	err := h.base.Handle(ctx, record)
	if !h.events.Wants(lxdapi.EventTypeLogging) {
		return err
	}

	fields := make(map[string]string, len(h.attrs)+record.NumAttrs())
	for _, a := range h.attrs {
		fields[a.Key] = a.Value.String()
	}

	record.Attrs(func(a slog.Attr) bool {
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}

		fields[key] = a.Value.String()
		return true
	})

	h.events.Send(lxdapi.EventTypeLogging, "", 0, lxdapi.EventLogging{
		Message: record.Message,
		Level:   strings.ToLower(record.Level.String()),
		Context: fields,
	})
	return err
}

func (h *loggingEvents) WithAttrs(attrs []slog.Attr) slog.Handler {
	next := *h
	next.base = h.base.WithAttrs(attrs)
	next.attrs = append([]slog.Attr{}, h.attrs...)
	for _, a := range attrs {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}

		next.attrs = append(next.attrs, a)
	}

	return &next
}

func (h *loggingEvents) WithGroup(name string) slog.Handler {
	next := *h
	next.base = h.base.WithGroup(name)
	if name != "" {
		if next.group != "" {
			name = next.group + "." + name
		}

		next.group = name
	}

	return &next
}
