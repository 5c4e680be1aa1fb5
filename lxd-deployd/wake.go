package main

import "github.com/lxd-deployd/lxd-deployd/lxd-deployd/doorkeeper"

// wakeShape asks a shape's governor for capacity because connections wait at its front
// door while it has no serving instance (doorkeeper.Waker: a scale request through the
// reporter, counted in the metrics).
func (d *daemon) wakeShape(s doorkeeper.ObservedShape, waiting func() int) {
	w := doorkeeper.Waker{DB: d.db, Notifier: d.reporter, Metrics: d.metrics, Logger: d.logger}
	w.Wake(s, waiting)
}
