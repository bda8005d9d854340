# mk/matrix.mk — the glibc matrix: `make check-matrix` builds the tree and
# runs the ground-truth capture tests inside minimal Debian roots of every
# suite our users run (glibc 2.31, 2.36, 2.41, 2.43); see
# scripts/check-matrix.sh. Needs root; roots are cached in
# /var/cache/heapgraph/roots (scripts/debroot.sh).
.PHONY: check-matrix
check-matrix:
	@sh scripts/check-matrix.sh $(MATRIX_SUITES)
