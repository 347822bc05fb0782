package dev.memrank.client;

/** One {@code google.rpc.BadRequest} field violation, e.g. {@code candidates[1].id: duplicate id}. */
public record FieldViolation(String field, String description) {}
