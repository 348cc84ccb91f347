// Package consoletest drives the web console in a real headless Chromium
// (chromedp) against kmirror's real server, engine and two real Kafka
// clusters, the way a user walks the original product's flow: sign in, add instances,
// open one, Smart Connect, create a task with "Start check" and "Create
// now", watch it replicate; read the list and the create form in
// Traditional Chinese; open the task page (parameters without the password,
// partitions, live uPlot charts) and restart the task; the dashboard's
// counters and its paused filter; pause, resume, delete.
//
// Chromium is required: a machine without it fails these tests (it never
// skips them), saying how to install it. Screenshots of every page land in
// <repo>/test-output/browser/.
package consoletest
