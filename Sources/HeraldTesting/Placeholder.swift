import Herald
// Temporary: replaced by the loopback server.
public enum _HeraldTestingPlaceholder {}
