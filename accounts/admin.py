"""User admin with each account's roles in the list (roles are groups; staff counts as admin)."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from accounts.models import Invitation
from accounts.roles import ADMIN, KNOWN_GROUPS

User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class RoleUserAdmin(UserAdmin):
    list_display = ["username", "email", "roles", "is_active", "last_login", "date_joined"]
    list_filter = ["groups", "is_staff", "is_superuser", "is_active"]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("groups")

    @admin.display(description="roles")
    def roles(self, user) -> str:
        # Same rule as accounts.roles.user_roles, but from the prefetched groups (one query per page).
        held = {group.name for group in user.groups.all()} & set(KNOWN_GROUPS)
        if user.is_staff or user.is_superuser:
            held.add(ADMIN)
        return ", ".join(sorted(held))


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Read-only history: invitations are made and renewed on the People page, where the rules are."""

    list_display = ["user", "role", "created_by", "created_at", "expires_at", "accepted_at", "replaced_at"]
    list_filter = ["role"]
    search_fields = ["user__username", "user__email"]
    # The key is the secret a link carries; the admin shows whose invitation it is, not the key.
    exclude = ["key"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
