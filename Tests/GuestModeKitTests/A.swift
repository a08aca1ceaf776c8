import Testing
@Test func a() {}
