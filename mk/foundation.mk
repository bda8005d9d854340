# mk/foundation.mk — rules for the foundation: the demo app, the format
# tests' extras (golden file, cbor2 cross-check) and the format benchmark.

$(BUILD)/examples/demo: examples/demo.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)
