// Temporary: replaced by the notification center.
public enum _HeraldNotificationsPlaceholder {}
